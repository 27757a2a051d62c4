//! Reading and writing JSON lines with a length bound.

use std::io;

use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// Appends bytes to `line` up to and excluding the next `\n`. Returns false at end of stream with nothing read;
/// a last line without its newline still counts. Cancel safe: a partial line stays in `line` for the next call.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<bool> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(!line.is_empty());
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (available.len(), false),
        };
        if line.len() + take > max {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("line longer than {max} bytes")));
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            return Ok(true);
        }
    }
}

/// Writes one value as a JSON line.
pub(crate) async fn write_line<W: AsyncWrite + Unpin, T: Serialize>(writer: &mut W, value: &T) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    writer.write_all(&bytes).await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<io::Result<Vec<u8>>> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let mut line = Vec::new();
            match read_line(&mut reader, &mut line, max).await {
                Ok(true) => out.push(Ok(line)),
                Ok(false) => return out,
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_across_buffer_refills() {
        let got = lines(b"{\"a\":1}\n\nlast", 100).await;
        let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(got, vec![b"{\"a\":1}".to_vec(), Vec::new(), b"last".to_vec()]);
    }

    #[tokio::test]
    async fn rejects_overlong_lines() {
        let got = lines(b"12345\n", 4).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap_err().kind(), io::ErrorKind::InvalidData);
        let got = lines(b"1234\n", 4).await;
        assert_eq!(got[0].as_ref().unwrap(), b"1234");
    }
}
