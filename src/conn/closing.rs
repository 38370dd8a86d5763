//! How a closing connection answers what keeps arriving (RFC 9000
//! §10.2.1).
//!
//! In the closing state sift answers every datagram from the peer's
//! address with its CONNECTION_CLOSE again, without opening it: the peer
//! may have missed the first. Packets it does not open could be anyone's,
//! so someone who knows the connection ID and spoofs the peer's address
//! could make a closing endpoint send far more than it receives. What goes
//! out in answer is therefore held to three times what came in since
//! closing began, and the answers slow down: the 1st, 2nd, 4th, 8th…
//! datagram gets one, as the RFC suggests. The first CONNECTION_CLOSE, sent
//! on entering the state, answers nothing and is not counted.
//!
//! No clock reads: like the rest of `conn`.

/// Datagrams and bytes seen and answered since the connection began
/// closing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ClosingAnswers {
    /// The first CONNECTION_CLOSE went out: what is sent from now on
    /// answers datagrams, within the allowance.
    first_sent: bool,
    /// Datagrams that arrived from the peer's address.
    datagrams: u64,
    /// Their bytes.
    received: u64,
    /// Bytes sent in answer.
    sent: u64,
}

impl ClosingAnswers {
    /// A datagram of `len` bytes arrived from the peer's address: whether
    /// it is one to answer.
    pub fn on_datagram(&mut self, len: usize) -> bool {
        self.datagrams += 1;
        self.received += len as u64;
        self.datagrams.is_power_of_two()
    }

    /// The most bytes the next datagram may take: unbounded for the first
    /// CONNECTION_CLOSE, three times what arrived less what was sent in
    /// answer after it.
    pub fn allowance(&self) -> Option<u64> {
        self.first_sent
            .then(|| (3 * self.received).saturating_sub(self.sent))
    }

    /// A datagram of `len` bytes with our CONNECTION_CLOSE went out.
    pub fn on_sent(&mut self, len: usize) {
        if self.first_sent {
            self.sent += len as u64;
        }
        self.first_sent = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_slow_down_and_stay_within_three_times_what_arrived() {
        let mut answers = ClosingAnswers::default();
        assert_eq!(answers.allowance(), None, "the first close is free");
        answers.on_sent(400);
        assert_eq!(answers.allowance(), Some(0));
        let due: Vec<bool> = (0..9).map(|_| answers.on_datagram(30)).collect();
        // The 1st, 2nd, 4th and 8th datagrams are answered.
        assert_eq!(
            due,
            [true, true, false, true, false, false, false, true, false]
        );
        // 9 × 30 bytes arrived: 810 may go back, less what did.
        assert_eq!(answers.allowance(), Some(810));
        answers.on_sent(500);
        assert_eq!(answers.allowance(), Some(310));
        answers.on_sent(400);
        assert_eq!(answers.allowance(), Some(0));
    }
}
