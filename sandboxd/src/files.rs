//! File reads through sandboxd's own view of the filesystem (symlinks resolve inside the sandbox).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::proto::{ErrorCode, FileRead, MAX_FILE_READ, RemoteError};

/// Reads at most `max_bytes` (capped at [`MAX_FILE_READ`]) from the start of the file at the absolute `path`.
pub(crate) fn read_file(path: &str, max_bytes: u64) -> Result<FileRead, RemoteError> {
    if !Path::new(path).is_absolute() {
        return Err(RemoteError::new(ErrorCode::BadRequest, format!("path {path:?} is not absolute")));
    }
    // O_NONBLOCK so a FIFO cannot hang the open; it is rejected just below anyway.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| RemoteError::from_io(&e, path))?;
    let meta = file.metadata().map_err(|e| RemoteError::from_io(&e, path))?;
    if meta.is_dir() {
        return Err(RemoteError::new(ErrorCode::IsDirectory, format!("{path} is a directory")));
    }
    if !meta.is_file() {
        return Err(RemoteError::new(ErrorCode::BadRequest, format!("{path} is not a regular file")));
    }
    let mut data = Vec::new();
    file.take(max_bytes.min(MAX_FILE_READ)).read_to_end(&mut data).map_err(|e| RemoteError::from_io(&e, path))?;
    // Kernel files such as /proc/* report size 0 yet have content.
    let size = meta.len().max(data.len() as u64);
    Ok(FileRead { path: path.to_owned(), size, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_bad_requests() {
        assert_eq!(read_file("etc/hostname", 10).unwrap_err().code, "bad_request");
    }

    #[test]
    fn special_files_are_refused_and_kernel_files_report_their_content_size() {
        assert_eq!(read_file("/dev/null", 10).unwrap_err().code, "bad_request");
        let status = read_file("/proc/self/status", 1 << 20).unwrap();
        assert!(status.size > 0 && status.size == status.data.len() as u64);
    }
}
