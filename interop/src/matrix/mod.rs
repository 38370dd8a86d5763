//! The interop matrix: sift, quiche, quinn and quic-go, each as client and as
//! server, every pair, case by case as the quic-interop-runner tests QUIC
//! stacks (`sift-matrix`, `interop/matrix.sh`).
//!
//! Owns the cases ([`cases`]), the implementations and what each cannot do
//! ([`stacks`]), the tap that sees the wire in front of the client
//! ([`tap`]), running one cell ([`cell`]), its verdict ([`checks`]) and the
//! report ([`report`]). Cells run one at a time: they are timed in real
//! time on a shared machine. The runner checks with a packet capture and
//! key logs; here the tap reads the cleartext of every packet (long-header
//! types, versions, connection IDs, tokens, sizes, addresses) and what
//! needs decryption (key updates, the offered cipher) comes from the
//! client's own report. Key logs are written for every cell
//! (`server-keys.log`, `client-keys.log`) and kept with a failure's logs.

pub mod cases;
pub mod cell;
pub mod checks;
pub mod report;
pub mod stacks;
pub mod tap;

use cases::Case;
use stacks::Stack;

/// The `--ci` slice: handshake and transfer between sift and each peer,
/// both roles (and sift ↔ sift).
pub const CI_CASES: [Case; 2] = [Case::Handshake, Case::Transfer];

/// The cells of a run: every client × server pair for every case, in
/// case-major order (so a slow case's cells run together), skipping pairs
/// `keep` refuses.
pub fn plan(
    cases: &[Case],
    clients: &[Stack],
    servers: &[Stack],
    keep: impl Fn(Stack, Stack) -> bool,
) -> Vec<(Stack, Stack, Case)> {
    let mut cells = Vec::new();
    for &case in cases {
        for &client in clients {
            for &server in servers {
                if keep(client, server) {
                    cells.push((client, server, case));
                }
            }
        }
    }
    cells
}

/// The pairs of the `--ci` slice: those with sift on at least one side.
pub fn ci_pair(client: Stack, server: Stack) -> bool {
    client == Stack::Sift || server == Stack::Sift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ci_slice_has_sift_against_each_peer_in_both_roles() {
        let cells = plan(&CI_CASES, &stacks::ALL, &stacks::ALL, ci_pair);
        // sift→sift, sift→{quiche, quinn, quic-go}, {quiche, quinn, quic-go}→sift.
        assert_eq!(cells.len(), 2 * 7);
        assert!(cells.contains(&(Stack::Sift, Stack::QuicGo, Case::Handshake)));
        assert!(cells.contains(&(Stack::Quinn, Stack::Sift, Case::Transfer)));
        assert!(!cells
            .iter()
            .any(|&(c, s, _)| c != Stack::Sift && s != Stack::Sift));
    }
}
