//! The ECN field of an IP packet (RFC 3168 §5): the two low bits of the IPv4
//! TOS byte or the IPv6 Traffic Class, as sockets read and write them.
//! RFC 9000 §13.4 has QUIC set it on every datagram and count what arrives;
//! RFC 9331 gives ECT(1) to L4S senders.

/// An ECN codepoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ecn {
    /// Not-ECT (0b00): the sender does not take part in ECN.
    #[default]
    NotEct,
    /// ECT(1) (0b01): ECN-capable; since RFC 9331, an L4S sender.
    Ect1,
    /// ECT(0) (0b10): ECN-capable, classic response.
    Ect0,
    /// CE (0b11): a queue on the path marked the packet, Congestion Experienced.
    Ce,
}

impl Ecn {
    /// The codepoint in the two low bits of a TOS or Traffic Class byte.
    pub fn from_tos(tos: u8) -> Ecn {
        match tos & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two bits this codepoint takes in a TOS or Traffic Class byte.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// `tos` with its ECN field replaced by this codepoint (the DSCP kept).
    pub fn set_in(self, tos: u8) -> u8 {
        (tos & !0b11) | self.bits()
    }

    /// ECT(0), ECT(1) or CE: the sender asked for marks instead of drops.
    pub fn is_ecn_capable(self) -> bool {
        self != Ecn::NotEct
    }

    /// The name tc, qlog and Wireshark give it.
    pub fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "Not-ECT",
            Ecn::Ect1 => "ECT(1)",
            Ecn::Ect0 => "ECT(0)",
            Ecn::Ce => "CE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codepoint_round_trips_through_a_tos_byte_and_keeps_its_dscp() {
        for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            let tos = ecn.set_in(0xb8); // DSCP EF
            assert_eq!(tos & !0b11, 0xb8);
            assert_eq!(Ecn::from_tos(tos), ecn);
        }
        assert_eq!(Ecn::from_tos(0x02), Ecn::Ect0);
        assert_eq!(Ecn::from_tos(0x01), Ecn::Ect1);
        assert!(!Ecn::NotEct.is_ecn_capable());
        assert!(Ecn::Ce.is_ecn_capable());
    }
}
