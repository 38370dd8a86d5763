//! The most goodput a download of a given size can reach on a link, so
//! that a table can say how far below it each stack stays.
//!
//! A sender that starts as every stack here does, with ten datagrams in
//! flight, and grows no faster than slow start's doubling per round trip,
//! on a link of rate C (bits per second, counted on the UDP payload as
//! `sift-link` counts it), base round trip R and a fraction p of datagrams
//! lost or corrupted (each needs sending again, so it costs capacity), can
//! at best do this:
//!
//! ```text
//! payload per datagram   P = D − O          (D = 1350, O = 35: see below)
//! capacity for new data  c = C · P/D · (1 − p)        bits per second
//! window of round k      w_k = 10 · 2^k datagrams, while w_k · D · 8 < C · R
//! slow-start rounds      n = how many rounds have w_k below one BDP
//!                        (fewer if the file ends inside one of them)
//! bytes in those rounds  B = Σ_{k<n} w_k · P · (1 − p)
//! time                   T = R + n · R + (S − B) · 8 / c
//! ceiling                S · 8 / T
//! ```
//!
//! The first R is the request's way to the server and the first byte's way
//! back. A round of slow start costs one round trip whatever it carries;
//! from the round whose window reaches the bandwidth-delay product on, the
//! link is full and the rest of the file flows at c. If the file ends
//! inside a slow-start round, that round's part takes its bytes at c
//! instead of a whole round trip.
//!
//! The handshake is outside T, as it is outside every client's timer here:
//! each clock starts when the request is sent on an established
//! connection (`sift-client`, `quiche-client`, `quinn-client` alike), and
//! a ceiling must measure the same interval as the figure beside it.
//!
//! O, the least a 1-RTT datagram of bulk data spends on anything but file
//! bytes: a 1-byte short header, an 8-byte connection ID, a 2-byte packet
//! number, a 16-byte AEAD tag, and an 8-byte STREAM frame header (type,
//! stream ID, 4-byte offset, length): 35 bytes. Stacks that use longer
//! connection IDs or packet numbers, or send ACK frames in the data
//! direction, stay below the ceiling by that much more.
//!
//! Defined for links with a fixed rate; a link with rate steps, outages,
//! stalls, slots, a bit error rate or corruption bursts has no ceiling here.

use sift::sim::link::{LinkConfig, LossModel};

/// UDP payload of every datagram in the link runs (all stacks are held to
/// it: sift's default `max_datagram_size`, the peers' configured size).
pub const DATAGRAM_BYTES: u64 = 1350;

/// Bytes of a bulk-data datagram that are not file bytes, at the least
/// (see the module docs).
pub const PER_DATAGRAM_OVERHEAD: u64 = 1 + 8 + 2 + 16 + 8;

/// Datagrams the first round of a transfer may carry (RFC 9002 §7.2's
/// initial window of ten).
pub const INITIAL_WINDOW_DATAGRAMS: u64 = 10;

/// What the ceiling needs to know of a path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Path {
    /// Bottleneck rate, bits per second of UDP payload.
    pub rate_bps: f64,
    /// Base round trip (no queue, no jitter), seconds.
    pub rtt_s: f64,
    /// Long-run fraction of data datagrams lost or corrupted.
    pub loss: f64,
}

impl Path {
    /// The path a link spec emulates: rate and loss of the data direction,
    /// the base delays of both directions. `None` when the data direction
    /// has no fixed rate, or has an impairment the ceiling does not model
    /// (module docs), or a spec does not parse.
    pub fn of_link(data: &str, ack: &str) -> Option<Path> {
        let data = LinkConfig::from_netem(data).ok()?;
        let ack = LinkConfig::from_netem(ack).ok()?;
        let rate_bps = data.rate_bps? as f64;
        let modelled = data.rate_steps.is_empty()
            && data.delay_steps.is_empty()
            && data.outage.is_none()
            && data.stall.is_none()
            && data.slot.is_none()
            && data.corrupt.ber == 0.0
            && data.corrupt.burst.is_none();
        if !modelled || rate_bps <= 0.0 {
            return None;
        }
        let lost = match data.loss {
            LossModel::Bernoulli { probability, .. } => probability,
            LossModel::FourState(model) => model.stationary_loss()?,
            LossModel::GilbertElliott(model) => model.stationary_rate()?,
        };
        let corrupted = data.corrupt.probability
            + match data.corrupt.gemodel {
                Some(model) => model.stationary_rate()?,
                None => 0.0,
            };
        // A datagram counts once whether lost, corrupted or both.
        let loss = 1.0 - (1.0 - lost) * (1.0 - corrupted.min(1.0));
        Some(Path {
            rate_bps,
            rtt_s: (data.delay_ms + ack.delay_ms).as_secs_f64(),
            loss,
        })
    }

    /// The ceiling's time for `file_bytes`: T of the module docs, seconds.
    pub fn best_time_s(&self, file_bytes: u64) -> f64 {
        let datagram = DATAGRAM_BYTES as f64;
        let delivered = (1.0 - self.loss).max(0.0);
        let payload = (DATAGRAM_BYTES - PER_DATAGRAM_OVERHEAD) as f64;
        // New file bytes per second once the link is full.
        let capacity = self.rate_bps / 8.0 * payload / datagram * delivered;
        let bdp_datagrams = self.rate_bps / 8.0 * self.rtt_s / datagram;
        let mut left = file_bytes as f64;
        let mut time = self.rtt_s;
        let mut window = INITIAL_WINDOW_DATAGRAMS as f64;
        while window < bdp_datagrams {
            let round = window * payload * delivered;
            if left <= round {
                return time + left / capacity;
            }
            left -= round;
            time += self.rtt_s;
            window *= 2.0;
        }
        time + left / capacity
    }

    /// The ceiling for a download of `file_bytes`: its bits over
    /// [`Path::best_time_s`], bits per second.
    pub fn ceiling_bps(&self, file_bytes: u64) -> f64 {
        file_bytes as f64 * 8.0 / self.best_time_s(file_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_of_the_long_lossy_link_follows_the_formula() {
        let path = Path::of_link("delay 50ms rate 50mbit limit 500 loss 1%", "delay 50ms").unwrap();
        assert_eq!(path.rate_bps, 50e6);
        assert!((path.rtt_s - 0.1).abs() < 1e-12);
        assert!((path.loss - 0.01).abs() < 1e-12);
        // BDP = 50e6/8 · 0.1 / 1350 = 463 datagrams: rounds of 10, 20, 40,
        // 80, 160 and 320 datagrams (630) fall below it, so six rounds.
        let delivered = 0.99;
        let payload = 1315.0;
        let slow_start = 630.0 * payload * delivered;
        let capacity = 50e6 / 8.0 * payload / 1350.0 * delivered;
        for bytes in [20_000_000u64, 50_000_000] {
            let time = 0.1 + 6.0 * 0.1 + (bytes as f64 - slow_start) / capacity;
            assert!((path.best_time_s(bytes) - time).abs() < 1e-9, "{bytes}");
            assert!((path.ceiling_bps(bytes) - bytes as f64 * 8.0 / time).abs() < 1e-3);
        }
        // About 41.2 Mb/s for 20 MB and 45.2 Mb/s for 50 MB.
        assert!((path.ceiling_bps(20_000_000) / 1e6 - 41.2).abs() < 0.1);
        assert!((path.ceiling_bps(50_000_000) / 1e6 - 45.2).abs() < 0.1);
    }

    #[test]
    fn a_file_that_ends_in_slow_start_takes_its_last_round_at_link_rate() {
        let path = Path {
            rate_bps: 50e6,
            rtt_s: 0.1,
            loss: 0.0,
        };
        // 10 + 20 datagrams' payload in two rounds, then 5 more datagrams'
        // worth inside the third round.
        let bytes = 35 * 1315;
        let capacity = 50e6 / 8.0 * 1315.0 / 1350.0;
        let expected = 0.1 + 2.0 * 0.1 + 5.0 * 1315.0 / capacity;
        assert!((path.best_time_s(bytes) - expected).abs() < 1e-9);
        // Ten datagrams' payload: one round trip and its serialisation.
        let ten = path.best_time_s(10 * 1315);
        assert!((ten - (0.1 + 10.0 * 1315.0 / capacity)).abs() < 1e-9);
    }

    #[test]
    fn loss_and_corruption_both_cost_capacity_and_bursty_loss_counts_its_mean() {
        let corrupt = Path::of_link(
            "delay 50ms rate 50mbit limit 500 loss 1% corrupt 2%",
            "delay 50ms",
        )
        .unwrap();
        assert!((corrupt.loss - (1.0 - 0.99 * 0.98)).abs() < 1e-12);
        // Gilbert-Elliott: bad 1/26 of the time, 40% lost there.
        let bursty = Path::of_link(
            "delay 20ms rate 20mbit limit 100 loss gemodel 1% 25% 40% 0%",
            "delay 20ms",
        )
        .unwrap();
        assert!((bursty.loss - 0.4 / 26.0).abs() < 1e-12);
        assert!((bursty.rtt_s - 0.04).abs() < 1e-12);
        let clean = Path::of_link("delay 50ms rate 50mbit limit 500", "delay 50ms").unwrap();
        assert!(corrupt.ceiling_bps(4_000_000) < clean.ceiling_bps(4_000_000));
    }

    #[test]
    fn links_without_a_fixed_rate_have_no_ceiling() {
        assert_eq!(Path::of_link("delay 10ms", "delay 10ms"), None);
        assert_eq!(
            Path::of_link("delay 10ms rate 10mbit outage 5s 100ms", "delay 10ms"),
            None
        );
        assert_eq!(Path::of_link("not netem", "delay 10ms"), None);
    }
}
