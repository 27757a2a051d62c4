//! Paging a conversation's event log (spec 4.1, events query rules):
//! cursors are event ids taken from the page; `asc` pages forward from
//! `after`, `desc` pages back from `before`; `whole_turns` (desc only)
//! extends a page back to the first event of the turn its oldest event
//! belongs to, up to the 5000-event ceiling (`turn_split` when a turn is
//! cut there). Output events are narrowed in SQL: the `prompt` stream only
//! when asked for, and only the named `streams`; stage events always show.

use axum::http::StatusCode;
use sqlx::Row;
use uuid::Uuid;

use super::{COLUMNS, Event, from_row};
use crate::db::Db;
use crate::error::ApiError;

/// The most events one page holds, `whole_turns` extensions included.
pub const MAX_PAGE: i64 = 5000;
pub const DEFAULT_LIMIT: i64 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

impl Order {
    pub const ALL: [Order; 2] = [Order::Asc, Order::Desc];

    pub fn as_str(self) -> &'static str {
        match self {
            Order::Asc => "asc",
            Order::Desc => "desc",
        }
    }
}

/// Output streams a client may name in `streams`. The `prompt` stream is not
/// among them: it is asked for with `prompts=true`.
pub const OUTPUT_STREAMS: [&str; 2] = ["stdout", "stderr"];

/// Which output events a page keeps (stage events are always kept). The
/// default is what a feed shows unless told otherwise: every output stream
/// but prompts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Include the `prompt`-stream events (a turn's prompt as sent).
    pub prompts: bool,
    /// Keep only these streams (from `OUTPUT_STREAMS`); None keeps every one.
    pub streams: Option<Vec<&'static str>>,
}

impl Output {
    /// Parses `prompts` and `streams` (comma-separated; an unknown name is 422 naming `streams`).
    pub fn new(prompts: bool, streams: Option<&str>) -> Result<Output, ApiError> {
        let streams = match streams {
            None => None,
            Some(list) => {
                let mut named = Vec::new();
                for name in list.split(',').map(str::trim) {
                    let Some(known) = OUTPUT_STREAMS.iter().find(|s| **s == name) else {
                        return Err(ApiError::invalid(
                            "streams",
                            format!("unknown stream {name:?}; use a comma-separated list of stdout, stderr"),
                        ));
                    };
                    if !named.contains(known) {
                        named.push(*known);
                    }
                }
                Some(named)
            }
        };
        Ok(Output { prompts, streams })
    }

    /// The SQL condition, built from fixed names only (never from input).
    fn clause(&self) -> String {
        match &self.streams {
            None if self.prompts => String::new(),
            None => "AND (kind <> 'output' OR stream <> 'prompt')".to_owned(),
            Some(names) => {
                let mut list: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
                if self.prompts {
                    list.push("'prompt'".to_owned());
                }
                format!("AND (kind <> 'output' OR stream IN ({}))", list.join(", "))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct PageQuery {
    pub after: Option<i64>,
    pub before: Option<i64>,
    pub order: Order,
    pub limit: i64,
    pub whole_turns: bool,
    pub output: Output,
}

impl PageQuery {
    /// Checks the parameters as the spec states them: `limit` 1 to 5000,
    /// `whole_turns` only with `order=desc`.
    pub fn new(
        after: Option<i64>,
        before: Option<i64>,
        order: Option<&str>,
        limit: Option<i64>,
        whole_turns: bool,
    ) -> Result<PageQuery, ApiError> {
        let order = match order {
            None | Some("asc") => Order::Asc,
            Some("desc") => Order::Desc,
            Some(_) => return Err(ApiError::invalid("order", "must be asc or desc")),
        };
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ApiError::invalid("limit", "must be between 1 and 5000"));
        }
        if whole_turns && order != Order::Desc {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation_failed",
                "whole_turns requires order=desc",
            )
            .with("errors", serde_json::json!({"whole_turns": ["requires order=desc"]})));
        }
        Ok(PageQuery { after, before, order, limit, whole_turns, output: Output::default() })
    }

    pub fn with_output(mut self, output: Output) -> PageQuery {
        self.output = output;
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// In the page's order.
    pub events: Vec<Event>,
    pub has_more: bool,
    /// The last event id of the page (the oldest for `desc`); None when empty.
    pub next_cursor: Option<i64>,
    pub oldest_cursor: Option<i64>,
    pub newest_cursor: Option<i64>,
    pub turn_split: bool,
    pub order: Order,
}

fn select(output: &Output, rest: &str) -> sqlx::AssertSqlSafe<String> {
    let only = output.clause();
    sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM events WHERE conversation_id = $1 AND id > $2 AND id < $3 {only} {rest}"
    ))
}

pub async fn page(db: &Db, conversation: Uuid, q: &PageQuery) -> Result<Page, sqlx::Error> {
    let after = q.after.unwrap_or(0);
    let before = q.before.unwrap_or(i64::MAX);
    let dir = if q.order == Order::Asc { "ASC" } else { "DESC" };
    let sql = select(&q.output, &format!("ORDER BY id {dir} LIMIT $4"));
    let rows = sqlx::query(sql)
        .bind(conversation.to_string())
        .bind(after)
        .bind(before)
        .bind(q.limit + 1)
        .fetch_all(&db.pool)
        .await?;
    let mut events: Vec<Event> = rows.iter().map(from_row).collect::<Result<_, _>>()?;
    let mut has_more = events.len() as i64 > q.limit;
    events.truncate(usize::try_from(q.limit).unwrap_or(usize::MAX));
    let mut turn_split = false;
    if q.whole_turns && has_more {
        // The oldest event's turn may have begun before the page: extend back to its first event.
        let oldest = events.last().cloned();
        if let Some(Event { id: oldest_id, turn_id: Some(turn), .. }) = oldest {
            let only = q.output.clause();
            let first: Option<i64> = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT MIN(id) AS first FROM events WHERE conversation_id = $1 AND turn_id = $2 AND id > $3 {only}"
            )))
            .bind(conversation.to_string())
            .bind(turn.to_string())
            .bind(after)
            .fetch_one(&db.pool)
            .await?
            .try_get("first")?;
            if let Some(first) = first.filter(|f| *f < oldest_id) {
                let room = MAX_PAGE - events.len() as i64;
                let sql = select(&q.output, "ORDER BY id DESC LIMIT $4");
                let rows = sqlx::query(sql)
                    .bind(conversation.to_string())
                    .bind(first - 1)
                    .bind(oldest_id)
                    .bind(room + 1)
                    .fetch_all(&db.pool)
                    .await?;
                let mut more: Vec<Event> = rows.iter().map(from_row).collect::<Result<_, _>>()?;
                turn_split = more.len() as i64 > room;
                more.truncate(usize::try_from(room).unwrap_or(0));
                events.extend(more);
                let new_oldest = events.last().map(|e| e.id).unwrap_or(oldest_id);
                has_more = older_exists(db, conversation, &q.output, after, new_oldest).await?;
            }
        }
    }
    let next_cursor = events.last().map(|e| e.id);
    let ids = events.iter().map(|e| e.id);
    let (oldest_cursor, newest_cursor) = (ids.clone().min(), ids.max());
    Ok(Page { events, has_more, next_cursor, oldest_cursor, newest_cursor, turn_split, order: q.order })
}

async fn older_exists(
    db: &Db,
    conversation: Uuid,
    output: &Output,
    after: i64,
    below: i64,
) -> Result<bool, sqlx::Error> {
    let only = output.clause();
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) AS n FROM (SELECT id FROM events WHERE conversation_id = $1 AND id > $2 AND id < $3 {only} \
         LIMIT 1) t"
    )))
    .bind(conversation.to_string())
    .bind(after)
    .bind(below)
    .fetch_one(&db.pool)
    .await?;
    Ok(row.try_get::<i64, _>("n")? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_follow_the_spec() {
        assert!(PageQuery::new(None, None, None, None, false).is_ok());
        assert_eq!(PageQuery::new(None, None, None, None, false).unwrap().limit, DEFAULT_LIMIT);
        assert!(PageQuery::new(None, None, None, Some(5000), false).is_ok());
        for bad in [0, -1, 5001] {
            let e = PageQuery::new(None, None, None, Some(bad), false).unwrap_err();
            assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        }
        let e = PageQuery::new(None, None, Some("asc"), None, true).unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(PageQuery::new(None, None, Some("desc"), None, true).is_ok());
        assert!(PageQuery::new(None, None, Some("sideways"), None, false).is_err());
    }

    #[test]
    fn output_filters_name_known_streams_only() {
        let default = Output::default();
        assert_eq!(default.clause(), "AND (kind <> 'output' OR stream <> 'prompt')");
        assert_eq!(Output::new(true, None).unwrap().clause(), "");
        let both = Output::new(false, Some("stderr, stdout,stderr")).unwrap();
        assert_eq!(both.streams, Some(vec!["stderr", "stdout"]));
        assert_eq!(both.clause(), "AND (kind <> 'output' OR stream IN ('stderr', 'stdout'))");
        let with_prompts = Output::new(true, Some("stdout")).unwrap();
        assert_eq!(with_prompts.clause(), "AND (kind <> 'output' OR stream IN ('stdout', 'prompt'))");
        for bad in ["", "prompt", "stdout,", "STDOUT", "stdout;drop"] {
            let e = Output::new(false, Some(bad)).unwrap_err();
            assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad:?}");
            assert!(e.errors.as_ref().unwrap().contains_key("streams"));
        }
    }
}
