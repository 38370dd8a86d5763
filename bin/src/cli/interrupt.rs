//! Ctrl-C during a download: say where the partial file is and how to
//! resume, then exit 130 like a shell would.

use std::sync::OnceLock;

/// The message the handler writes; set once before the download starts.
static MESSAGE: OnceLock<Vec<u8>> = OnceLock::new();

extern "C" fn on_interrupt(_signal: libc::c_int) {
    if let Some(message) = MESSAGE.get() {
        // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is
        // immutable once set and lives for the whole process.
        unsafe {
            libc::write(2, message.as_ptr().cast(), message.len());
        }
    }
    // SAFETY: as above.
    unsafe { libc::_exit(130) }
}

/// On SIGINT or SIGTERM, print `message` (one line) and exit 130.
pub fn announce_on_interrupt(message: String) {
    let mut line = format!("\n{message}\n").into_bytes();
    line.shrink_to_fit();
    if MESSAGE.set(line).is_err() {
        return; // already installed for this process
    }
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}
