//! Who may upload, and how much may be uploading at once.
//!
//! A server is read-only unless told otherwise ([`UploadPolicy`]); when it
//! takes uploads, an [`UploadBudget`] reserves each upload's announced size
//! when it starts and releases it when it ends, so uploads running side by
//! side can neither pass a cap together nor fill the disk, as each checking
//! free space alone would.
//!
//! Must not: read files or know where the list of authorised clients lives
//! (a [`ClientGate`] from the binary does).

use std::fmt;
use std::sync::{Arc, Mutex};

use sift::crypto::Fingerprint;

/// The default cap on bytes being uploaded at once across the server
/// (`--max-upload-bytes`): 16 GiB.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 16 << 30;

/// Free space an upload may never take: 512 MiB stay free for the server's
/// own state, its logs and everything else on the disk.
pub const FREE_SPACE_MARGIN: u64 = 512 << 20;

/// Decides which clients may upload, by the key they proved in the
/// handshake.
pub trait ClientGate: Send + Sync {
    /// `Ok` if the client holding `key` (`None`: it presented none) may
    /// upload; otherwise one line for the client saying why and what its
    /// owner can do about it.
    fn admit(&self, key: Option<Fingerprint>) -> Result<(), String>;
}

/// Whether a server takes uploads, and from whom.
#[derive(Clone, Default)]
pub enum UploadPolicy {
    /// Every upload is refused: the default.
    #[default]
    ReadOnly,
    /// Uploads from any client, with a key or not (`--allow-anonymous-put`).
    Anyone,
    /// Uploads from the clients `gate` admits.
    Clients(Arc<dyn ClientGate>),
}

impl fmt::Debug for UploadPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UploadPolicy::ReadOnly => "ReadOnly",
            UploadPolicy::Anyone => "Anyone",
            UploadPolicy::Clients(_) => "Clients",
        })
    }
}

impl UploadPolicy {
    /// `Ok` if the client holding `key` may upload; otherwise why not, in
    /// one line.
    pub fn admit(&self, key: Option<Fingerprint>) -> Result<(), String> {
        match self {
            UploadPolicy::ReadOnly => {
                Err("this server is read-only (start it with --allow-put)".to_string())
            }
            UploadPolicy::Anyone => Ok(()),
            UploadPolicy::Clients(gate) => gate.admit(key),
        }
    }
}

/// Why an upload could not start: one line for the client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetRefusal {
    /// Uploads in progress plus this one pass the server's cap.
    #[error("{in_progress} bytes are being uploaded already and this server takes at most {cap} at once: {size} more do not fit now, try again later")]
    OverCap {
        size: u64,
        in_progress: u64,
        cap: u64,
    },
    /// The disk cannot hold this upload beside those in progress and the
    /// margin kept free.
    #[error("no room for {size} bytes: {free} bytes free on the server, {pending} of them promised to uploads in progress and {margin} kept free")]
    NoRoom {
        size: u64,
        free: u64,
        pending: u64,
        margin: u64,
    },
}

/// What is promised to the uploads in progress.
#[derive(Debug, Default)]
struct Promised {
    /// Sum of the announced sizes: what the cap bounds.
    announced: u64,
    /// Sum of the bytes announced but not yet written: what free space
    /// must still hold (written bytes already left the free space).
    unwritten: u64,
}

/// The bytes a server lets be uploaded at once: a cap, and the free space
/// minus a margin. Shared by every upload of the server.
#[derive(Debug)]
pub struct UploadBudget {
    max_bytes: u64,
    free_margin: u64,
    promised: Mutex<Promised>,
}

impl Default for UploadBudget {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_UPLOAD_BYTES, FREE_SPACE_MARGIN)
    }
}

impl UploadBudget {
    /// At most `max_bytes` in uploads at once, and never less than
    /// `free_margin` bytes left free.
    pub fn new(max_bytes: u64, free_margin: u64) -> Self {
        Self {
            max_bytes,
            free_margin,
            promised: Mutex::new(Promised::default()),
        }
    }

    /// The cap on bytes being uploaded at once.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Reserves `size` bytes for an upload about to start, given the
    /// `free` bytes of its filesystem now (`None`: unknown, only the cap
    /// applies). The reservation lasts until it is dropped.
    pub fn reserve(&self, size: u64, free: Option<u64>) -> Result<Reservation<'_>, BudgetRefusal> {
        let mut promised = self.lock();
        if promised.announced.saturating_add(size) > self.max_bytes {
            return Err(BudgetRefusal::OverCap {
                size,
                in_progress: promised.announced,
                cap: self.max_bytes,
            });
        }
        if let Some(free) = free {
            let needed = size
                .saturating_add(promised.unwritten)
                .saturating_add(self.free_margin);
            if needed > free {
                return Err(BudgetRefusal::NoRoom {
                    size,
                    free,
                    pending: promised.unwritten,
                    margin: self.free_margin,
                });
            }
        }
        promised.announced += size;
        promised.unwritten += size;
        Ok(Reservation {
            budget: self,
            announced: size,
            unwritten: size,
        })
    }

    /// Bytes announced by the uploads in progress.
    pub fn in_progress(&self) -> u64 {
        self.lock().announced
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Promised> {
        // The counters stay consistent under any panic (each update is one
        // statement), so a poisoned lock is still right.
        self.promised
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One upload's share of the [`UploadBudget`], released on drop.
#[derive(Debug)]
pub struct Reservation<'a> {
    budget: &'a UploadBudget,
    announced: u64,
    unwritten: u64,
}

impl Reservation<'_> {
    /// `bytes` more of the upload are on disk: they no longer need to be
    /// kept free for it.
    pub fn wrote(&mut self, bytes: u64) {
        let bytes = bytes.min(self.unwritten);
        self.unwritten -= bytes;
        self.budget.lock().unwritten -= bytes;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut promised = self.budget.lock();
        promised.announced -= self.announced;
        promised.unwritten -= self.unwritten;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_only_default_refuses_every_client_naming_the_flag() {
        let key = Some(Fingerprint::of_certificate(b"client"));
        let refusal = UploadPolicy::default().admit(key).unwrap_err();
        assert_eq!(
            refusal,
            "this server is read-only (start it with --allow-put)"
        );
        assert!(UploadPolicy::Anyone.admit(None).is_ok());
    }

    #[test]
    fn concurrent_uploads_together_stay_under_the_cap() {
        let budget = UploadBudget::new(1000, 0);
        let first = budget.reserve(600, None).unwrap();
        // 600 in progress + 500 = 1100 > 1000.
        assert_eq!(
            budget.reserve(500, None).unwrap_err(),
            BudgetRefusal::OverCap {
                size: 500,
                in_progress: 600,
                cap: 1000
            }
        );
        let second = budget.reserve(400, None).unwrap();
        assert_eq!(budget.in_progress(), 1000);
        drop(first);
        drop(second);
        assert_eq!(budget.in_progress(), 0);
        assert!(budget.reserve(1000, None).is_ok());
    }

    #[test]
    fn free_space_counts_what_uploads_in_progress_still_have_to_write() {
        let budget = UploadBudget::new(u64::MAX, 100);
        let mut first = budget.reserve(500, Some(1000)).unwrap();
        // 1000 free: 500 promised to the first upload, 100 kept free, so
        // 400 is the most a second upload may announce.
        let refusal = budget.reserve(401, Some(1000)).unwrap_err();
        assert_eq!(
            refusal,
            BudgetRefusal::NoRoom {
                size: 401,
                free: 1000,
                pending: 500,
                margin: 100
            }
        );
        assert!(refusal.to_string().starts_with("no room for 401 bytes"));
        // The first upload wrote 300 bytes: free space shrank by as much,
        // and only 200 remain promised to it.
        first.wrote(300);
        let second = budget.reserve(400, Some(700)).unwrap();
        assert!(budget.reserve(1, Some(700)).is_err());
        drop(second);
        drop(first);
        assert!(budget.reserve(600, Some(700)).is_ok());
    }

    #[test]
    fn writing_more_than_announced_never_underflows_the_budget() {
        let budget = UploadBudget::new(100, 0);
        let mut reservation = budget.reserve(10, Some(100)).unwrap();
        reservation.wrote(50);
        drop(reservation);
        assert_eq!(budget.in_progress(), 0);
        assert!(budget.reserve(100, Some(100)).is_ok());
    }
}
