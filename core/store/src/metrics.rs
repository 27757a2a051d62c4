//! Prometheus metrics: request counts and latencies by route and status,
//! served at `/metrics` when `metrics.enabled` is set.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Latency bucket upper bounds in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Default)]
struct Series {
    count: u64,
    sum_seconds: f64,
    buckets: [u64; BUCKETS.len()],
}

#[derive(Default)]
pub struct Metrics {
    enabled: bool,
    series: Mutex<BTreeMap<(String, String, u16), Series>>,
}

impl Metrics {
    pub fn new(enabled: bool) -> Self {
        Metrics { enabled, series: Mutex::default() }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        if !self.enabled {
            return;
        }
        let secs = elapsed.as_secs_f64();
        let mut map = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let s = map.entry((method.to_owned(), route.to_owned(), status)).or_default();
        s.count += 1;
        s.sum_seconds += secs;
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                s.buckets[i] += 1;
            }
        }
    }

    /// The Prometheus text exposition format.
    pub fn render(&self) -> String {
        let map = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        out.push_str("# HELP acs_http_requests_total HTTP requests by route and status.\n");
        out.push_str("# TYPE acs_http_requests_total counter\n");
        for ((m, r, st), s) in map.iter() {
            let _ =
                writeln!(out, "acs_http_requests_total{{method=\"{m}\",route=\"{r}\",status=\"{st}\"}} {}", s.count);
        }
        out.push_str("# HELP acs_http_request_duration_seconds HTTP request latency by route and status.\n");
        out.push_str("# TYPE acs_http_request_duration_seconds histogram\n");
        for ((m, r, st), s) in map.iter() {
            let labels = format!("method=\"{m}\",route=\"{r}\",status=\"{st}\"");
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ =
                    writeln!(out, "acs_http_request_duration_seconds_bucket{{{labels},le=\"{le}\"}} {}", s.buckets[i]);
            }
            let _ = writeln!(out, "acs_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}", s.count);
            let _ = writeln!(out, "acs_http_request_duration_seconds_sum{{{labels}}} {}", s.sum_seconds);
            let _ = writeln!(out, "acs_http_request_duration_seconds_count{{{labels}}} {}", s.count);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_counts_are_cumulative() {
        let m = Metrics::new(true);
        m.observe("GET", "/api/x", 200, Duration::from_millis(3));
        m.observe("GET", "/api/x", 200, Duration::from_millis(300));
        let out = m.render();
        assert!(out.contains("acs_http_requests_total{method=\"GET\",route=\"/api/x\",status=\"200\"} 2"), "{out}");
        assert!(out.contains("le=\"0.005\"} 1"), "{out}");
        assert!(out.contains("le=\"0.5\"} 2"), "{out}");
    }

    #[test]
    fn disabled_records_nothing() {
        let m = Metrics::new(false);
        m.observe("GET", "/", 200, Duration::ZERO);
        assert!(!m.render().contains("acs_http_requests_total{"));
    }
}
