//! Careful Resume (RFC 9959, "Convergence of Congestion Control from
//! Retained State"): a sender that saw a path's capacity and RTT on an
//! earlier connection jumps to half that capacity, paced over the current
//! RTT, once the path proves to be the same, validates the jump, and
//! retreats safely if it was too much.
//!
//! [`CarefulResume`] wraps any controller. It is transparent except while
//! it holds the window (Unvalidated and Safe Retreat) or paces the jump
//! (Unvalidated); at each phase change it hands the controller a window
//! ([`CongestionControl::set_window`]) and the controller goes on under its
//! own rules. A model-based controller (BBR) is also told the path's
//! bandwidth and minimum RTT at the jump
//! ([`CongestionControl::seed_path_model`]), as picoquic seeds its BBR.
//!
//! The phases, one transition function per event (RFC 9959 §3):
//!
//! ```text
//!  Reconnaissance ──(RTT confirmed, cwnd-limited, jump > cwnd)──► Unvalidated
//!        │ (loss, RTT not confirmed, jump ≤ cwnd)                    │
//!        ▼                                                          │ (first unvalidated packet
//!      Normal ◄──(last unvalidated packet acked)── Validating ◄─────┘  acked, or jump sent)
//!        ▲                                           │
//!        └──(last unvalidated packet acked)── Safe Retreat ◄── (congestive loss in
//!                                                                Unvalidated or Validating)
//! ```
//!
//! Packets are told apart by when they were sent, not by packet number (a
//! controller never sees packet numbers on send): "the first unvalidated
//! packet is acknowledged" is an ACK whose largest newly acknowledged
//! packet was sent at or after the first send of the Unvalidated phase.
//!
//! "Congestion" (§3.3: a sender that detects it while unvalidated MUST
//! retreat) is what the wrapped controller judges congestive, as the RFC
//! names packet loss or ECN-CE: Reno and CUBIC judge every loss so, and a
//! loss-differentiating controller (Veno's, Westwood's or BBR's verdict)
//! that attributes a loss to the link has detected no congestion; sift's
//! premise is that on a lossy radio path such a loss says nothing about the
//! jump. [`CarefulResumeConfig::retreat_on_random_loss`] retreats on every
//! loss whatever the verdict.
//!
//! One option, off by default, relaxes the retreat:
//! [`CarefulResumeConfig::retreat_loss_permille`] at
//! [`MEASURED_RETREAT_LOSS_PERMILLE`] (2%) retreats on a congestive loss
//! only once the bytes declared lost since the jump exceed that share of
//! the bytes sent since it (or an RTT since the jump exceeds 5/4 of the
//! saved one, a queue): a jump that overfills the path's queue loses a
//! burst, while a sprinkle of random loss (1% on a radio path: about seven
//! packets of a 700-packet jump) says nothing about it. Measured in
//! `docs/notes/2026-11-27-long-paths.md`: it keeps a resumed CUBIC on a
//! path with 1% random loss from retreating to half its pipe, where under
//! the RFC it runs slower than a fresh connection. It breaks §3.3's MUST,
//! so it is an option for such paths and experiments, not the default.
//!
//! Two choices differ from the RFC's letter, each a
//! [`CarefulResumeConfig`] field whose other value is the letter, none of
//! them against a MUST:
//! - a current RTT above twice the saved one is another path
//!   ([`CarefulResumeConfig::rtt_upper_factor`]; the RFC's bound is ten
//!   times): an RTT grown by another flow's standing queue passed the
//!   RFC's check, and the jump landed in that queue.
//! - over an RTT above 5/4 of the saved one, the jump waits until the
//!   initial window is acknowledged
//!   ([`CarefulResumeConfig::jump_after_reconnaissance_acked`]), so that its
//!   losses count as congestion in Reconnaissance; the handshake's RTT
//!   sample alone let the jump leave with the initial window.
//!
//! No clock reads: every event carries `now`.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{
    minimum_window, scale_window, AckEvent, CongestionControl, CorruptionEvent, EcnEvent, Ect,
    LossEvent, LossVerdict, Metrics, PacketsLost, RecoveryPolicy, SpuriousCongestionEvent,
    VerdictBasis,
};

/// RFC 9959 §3.3: the jump is no more than half the saved window
/// (`jump_cwnd ≤ saved_cwnd/2`), so that flows that started since the
/// observation are not starved.
pub const JUMP_FRACTION: (u64, u64) = (1, 2);
/// RFC 9959 §3.5: on entering Safe Retreat the window is no more than half
/// the validated pipe (`cwnd ≤ PipeSize/2`).
pub const RETREAT_FRACTION: (u64, u64) = (1, 2);
/// RFC 9959 §3.5: leaving Safe Retreat, ssthresh is the controller's loss
/// reduction of the pipe, no more than the pipe; sift uses Reno's β = 1/2
/// for every controller (the most conservative of them).
pub const RETREAT_SSTHRESH_FRACTION: (u64, u64) = (1, 2);
/// RFC 9959 §4.2.1: the path is another if the current RTT is below half
/// the saved one...
pub const RTT_LOWER_DIVISOR: u32 = 2;
/// ...or above ten times it ([`CarefulResumeConfig::rtt_upper_factor`]
/// sets sift's bound; this is the RFC's).
pub const RTT_UPPER_FACTOR: u32 = 10;
/// A current RTT above 5/4 of the saved minimum shows a queue the saved
/// path did not have (or a longer path): with
/// [`CarefulResumeConfig::jump_after_reconnaissance_acked`] the jump then
/// waits for the initial window's fate.
pub const QUEUED_RTT_FRACTION: (u32, u32) = (5, 4);
/// sift's measured share of a jump that may be lost before a congestive
/// loss retreats ([`CarefulResumeConfig::retreat_loss_permille`]): 2%,
/// BBR's `loss_threshold`. An option; the RFC's letter, `0`, is the default.
pub const MEASURED_RETREAT_LOSS_PERMILLE: u32 = 20;

/// What a sender saved about a path at the end of (or during) an earlier
/// connection: the capacity it saw, as a window in bytes, and the minimum
/// RTT (RFC 9959 §3.1, `saved_cwnd` and `saved_rtt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedPath {
    /// The window the path carried, bytes (`CR.saved_cwnd`).
    pub cwnd: u64,
    /// The path's minimum RTT (`CR.saved_rtt`).
    pub min_rtt: Duration,
}

/// Careful Resume's knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CarefulResumeConfig {
    /// Start Safe Retreat on any loss during Unvalidated or Validating,
    /// even one the controller judges random (the link's, not congestion).
    /// `false` (the default): only a loss judged congestive (every loss,
    /// for Reno and CUBIC), and then only past
    /// [`Self::retreat_loss_permille`] (none, by default).
    pub retreat_on_random_loss: bool,
    /// At the jump, tell a controller with a Startup (BBR) the saved
    /// path's bandwidth (`saved_cwnd / saved_rtt`), so that it ends
    /// Startup once its own estimate reaches 7/8 of it
    /// ([`CongestionControl::set_startup_target`]). The RFC leaves the
    /// controller alone after the jump; BBR then goes on in Startup from
    /// the seeded half rate, at Startup's gain of 2.77, and overfills a
    /// one-BDP queue before its three-round plateau test ends it. A path
    /// that lost capacity never reaches the target, and Startup ends as
    /// the draft says. `true` by default; `false` is the RFC's letter.
    pub startup_exit_at_saved_rate: bool,
    /// When the current RTT is above [`QUEUED_RTT_FRACTION`] of the saved
    /// one (a queue the saved path did not have), jump only once the
    /// window that filled in Reconnaissance (the flight when the sender
    /// was first cwnd-limited: the initial window) has been acknowledged in
    /// full, so that a loss among it is seen as congestion in
    /// Reconnaissance (§3.2: no jump) before the jump, not after. `false`
    /// (and any RTT within the fraction) jumps as soon as the RTT is
    /// confirmed by any sample, the handshake's included, and the sender
    /// is cwnd-limited: on a path whose queue another flow keeps full that
    /// is before any data could be acknowledged, and the initial window's
    /// losses show only once the whole jump is in flight
    /// (`docs/notes/2026-11-27-long-paths.md`). `true` by default; `false` is
    /// how sift jumped before, and as sift reads the RFC its letter: a
    /// confirmed RTT and no congestion seen in Reconnaissance, not its
    /// data acknowledged (picoquic waits for its first ten packets).
    pub jump_after_reconnaissance_acked: bool,
    /// A current RTT above this many times the saved one means another
    /// path (§4.2.1): Normal, no jump. The RFC's bound is
    /// [`RTT_UPPER_FACTOR`] (10), wide enough for a path whose RTT grew
    /// fourfold with a standing queue of other flows to pass as the saved
    /// one; the jump then lands in that queue (`docs/notes/2026-11-27-long-paths.md`).
    /// The default is 2: a path whose RTT doubled is not
    /// the one whose window was saved. `10` is the RFC's letter.
    pub rtt_upper_factor: u32,
    /// Safe Retreat needs, besides a loss judged congestive in
    /// Unvalidated or Validating, the bytes declared lost since the jump
    /// to exceed this many thousandths of the bytes sent since it. `0`, the
    /// default, is the RFC's letter (§3.3: any congestion retreats).
    /// [`MEASURED_RETREAT_LOSS_PERMILLE`] (20, 2%) is sift's measured
    /// option for paths with random loss: Reno and CUBIC judge every loss
    /// congestive, so on a path with 1% random loss a resumed CUBIC
    /// connection almost always retreated, to half its validated pipe,
    /// and ran slower than a fresh one (`docs/notes/2026-11-27-long-paths.md`).
    /// A jump that overfills a one-BDP queue loses far more than 2% of it
    /// in a burst; 2% is also BBR's `loss_threshold`. An RTT since the
    /// jump above [`QUEUED_RTT_FRACTION`] of the saved one shows a queue,
    /// and then any congestive loss retreats: a jump into another flow's
    /// standing queue is seen by its RTT before its losses add up. A loss
    /// below the share still reaches the controller as usual.
    pub retreat_loss_permille: u32,
}

impl Default for CarefulResumeConfig {
    fn default() -> Self {
        Self {
            retreat_on_random_loss: false,
            startup_exit_at_saved_rate: true,
            jump_after_reconnaissance_acked: true,
            rtt_upper_factor: 2,
            retreat_loss_permille: 0,
        }
    }
}

/// The phases of RFC 9959 §3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CarefulResumePhase {
    /// §3.2: the normal start (initial window) while the RTT is confirmed
    /// against the saved one.
    Reconnaissance,
    /// §3.3: the window jumped to half the saved one, paced over the
    /// current RTT; not yet acknowledged.
    Unvalidated,
    /// §3.4: waiting for the jump's packets to be acknowledged; the
    /// controller runs from the flight size.
    Validating,
    /// §3.5: the jump met congestion: the window is half the validated
    /// pipe until the jump's packets are acknowledged or lost.
    SafeRetreat,
    /// The controller alone, from here on.
    Normal,
}

impl CarefulResumePhase {
    /// A number for time series and metrics fields (0 = Reconnaissance …
    /// 4 = Normal).
    pub fn index(self) -> u8 {
        self as u8
    }
}

/// Why the phase changed (the triggers of draft-ietf-tsvwg-careful-resume-qlog).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CarefulResumeTrigger {
    /// The sender had more to send than its window allowed, with the RTT
    /// confirmed: the jump.
    CwndLimited,
    /// The current RTT is outside the saved one's bounds (§4.2.1).
    RttNotValidated,
    /// The window already held at least the jump.
    CwndLargerThanJump,
    /// The first packet sent after the jump was acknowledged.
    FirstUnvalidatedPacketAcknowledged,
    /// The whole jump was sent.
    LastUnvalidatedPacketSent,
    /// The sender did not use the jump (flight size at or below the pipe).
    RateLimited,
    /// The last packet sent in Unvalidated was acknowledged.
    LastUnvalidatedPacketAcknowledged,
    /// A loss judged congestive (or any, see the config).
    PacketLoss,
    /// CE marks reported (sift's name: the qlog draft lists only
    /// `packet_loss`, and RFC 9959 §3.3 treats CE as it treats loss).
    CongestionExperienced,
    /// Safe Retreat is over: the jump's packets are acknowledged or lost.
    ExitRecovery,
}

/// One phase change, for `Stats` and the trace.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CarefulResumeChange {
    /// When it happened.
    #[serde(skip)]
    pub at: Option<Instant>,
    /// The phase left.
    pub old: CarefulResumePhase,
    /// The phase entered.
    pub new: CarefulResumePhase,
    /// Why.
    pub trigger: CarefulResumeTrigger,
    /// The window after the change, bytes.
    pub cwnd: u64,
    /// The pipe size (`CR.pipesize`) at the change, bytes.
    pub pipesize: u64,
}

/// Careful Resume's state, for `Stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarefulResumeStatus {
    /// The phase now.
    pub phase: CarefulResumePhase,
    /// The saved state this connection resumes from.
    pub saved_cwnd: u64,
    /// The saved minimum RTT, microseconds.
    pub saved_rtt_us: u64,
    /// The window of the jump, bytes; zero until it happened.
    pub jump_cwnd: u64,
    /// Bytes acknowledged since the jump, the flight at the jump included
    /// (`CR.pipesize`).
    pub pipesize: u64,
    /// The jump was taken.
    pub jumped: bool,
    /// Safe Retreat was entered.
    pub retreated: bool,
}

/// A controller run under Careful Resume from a saved path state.
#[derive(Debug)]
pub struct CarefulResume {
    inner: Box<dyn CongestionControl>,
    config: CarefulResumeConfig,
    saved: SavedPath,
    mss: u64,
    phase: CarefulResumePhase,
    /// The window Careful Resume holds in Unvalidated and Safe Retreat.
    held_cwnd: u64,
    jump_cwnd: u64,
    /// The current RTT confirmed in Reconnaissance (`current_rtt`).
    current_rtt: Option<Duration>,
    /// The last send found the window full: the sender is cwnd-limited.
    cwnd_limited: bool,
    /// The flight when the window first filled in Reconnaissance, bytes.
    reconnaissance_window: Option<u64>,
    /// Bytes acknowledged in Reconnaissance since the window first filled.
    reconnaissance_acked: u64,
    /// The last ACK in Reconnaissance acknowledged a packet sent while the
    /// application had nothing more to send.
    app_limited: bool,
    pipesize: u64,
    /// When the first packet of the Unvalidated phase left.
    first_unvalidated_sent: Option<Instant>,
    /// When the last packet of the Unvalidated phase left.
    last_unvalidated_sent: Option<Instant>,
    last_sent: Option<Instant>,
    retreated: bool,
    /// Bytes sent since the jump, in Unvalidated and Validating.
    jump_sent: u64,
    /// Bytes declared lost in Unvalidated and Validating.
    jump_lost: u64,
    /// The largest RTT seen from the jump on: the confirmed one, then
    /// each ACK's latest sample in Unvalidated and Validating.
    jump_max_rtt: Duration,
    /// A loss judged congestive came in Unvalidated or Validating below
    /// the retreat share: later declarations of the same recovery period
    /// (which reach only `on_packets_lost`) may still cross it.
    congestion_seen: bool,
    changes: Vec<CarefulResumeChange>,
}

impl CarefulResume {
    /// `inner` resumed from `saved`, for packets of `mss` bytes: starts in
    /// Reconnaissance with `inner`'s own initial window.
    pub fn new(
        inner: Box<dyn CongestionControl>,
        saved: SavedPath,
        config: CarefulResumeConfig,
        mss: u64,
    ) -> Self {
        Self {
            inner,
            config,
            saved,
            mss,
            phase: CarefulResumePhase::Reconnaissance,
            held_cwnd: 0,
            jump_cwnd: 0,
            current_rtt: None,
            cwnd_limited: false,
            reconnaissance_window: None,
            reconnaissance_acked: 0,
            app_limited: false,
            pipesize: 0,
            first_unvalidated_sent: None,
            last_unvalidated_sent: None,
            last_sent: None,
            retreated: false,
            jump_sent: 0,
            jump_lost: 0,
            jump_max_rtt: Duration::ZERO,
            congestion_seen: false,
            changes: Vec::new(),
        }
    }

    /// The phase now.
    pub fn phase(&self) -> CarefulResumePhase {
        self.phase
    }

    fn enter(&mut self, new: CarefulResumePhase, trigger: CarefulResumeTrigger, at: Instant) {
        let old = self.phase;
        self.phase = new;
        self.changes.push(CarefulResumeChange {
            at: Some(at),
            old,
            new,
            trigger,
            cwnd: self.window(),
            pipesize: self.pipesize,
        });
    }

    /// §3.2 → §3.3: jump when the RTT is confirmed and the sender is
    /// cwnd-limited; give up when the window already holds the jump.
    fn try_jump(&mut self, now: Instant, bytes_in_flight: u64) {
        let Some(current_rtt) = self.current_rtt else {
            return;
        };
        let (num, den) = QUEUED_RTT_FRACTION;
        let wait = self.config.jump_after_reconnaissance_acked
            && current_rtt > self.saved.min_rtt * num / den;
        // Waiting, the sender that filled its window once still has more
        // to send unless it became application-limited: when the window's
        // last ACK comes, its flight is what slow start sent since.
        let limited = if wait {
            self.reconnaissance_window.is_some() && !self.app_limited
        } else {
            self.cwnd_limited
        };
        if self.phase != CarefulResumePhase::Reconnaissance || !limited {
            return;
        }
        let jump = scale_window(self.saved.cwnd, JUMP_FRACTION);
        if jump <= self.inner.window() {
            self.enter(
                CarefulResumePhase::Normal,
                CarefulResumeTrigger::CwndLargerThanJump,
                now,
            );
            return;
        }
        if wait
            && self
                .reconnaissance_window
                .is_none_or(|window| self.reconnaissance_acked < window)
        {
            // The window that filled is not acknowledged yet: a loss among
            // it would be congestion before the jump.
            return;
        }
        // PipeSize starts at the flight size: the window before the jump.
        self.pipesize = bytes_in_flight;
        self.jump_cwnd = jump;
        self.held_cwnd = jump;
        self.jump_max_rtt = current_rtt;
        let rate = jump as f64 / current_rtt.as_secs_f64().max(1e-6);
        self.inner.seed_path_model(rate, current_rtt);
        if self.config.startup_exit_at_saved_rate {
            let saved_rtt = self.saved.min_rtt.as_secs_f64().max(1e-6);
            self.inner
                .set_startup_target(self.saved.cwnd as f64 / saved_rtt);
        }
        self.enter(
            CarefulResumePhase::Unvalidated,
            CarefulResumeTrigger::CwndLimited,
            now,
        );
    }

    /// §3.3 → §3.4: the window becomes the flight size; a sender that did
    /// not use the jump (flight at or below the pipe) goes to Normal with
    /// the pipe as its window.
    fn leave_unvalidated(
        &mut self,
        now: Instant,
        bytes_in_flight: u64,
        trigger: CarefulResumeTrigger,
    ) {
        if self.last_unvalidated_sent.is_none() {
            self.last_unvalidated_sent = self.last_sent;
        }
        if bytes_in_flight <= self.pipesize {
            let cwnd = self.pipesize.max(minimum_window(self.mss));
            self.inner.set_window(cwnd, None);
            self.enter(
                CarefulResumePhase::Normal,
                CarefulResumeTrigger::RateLimited,
                now,
            );
            return;
        }
        self.inner.set_window(bytes_in_flight, None);
        self.enter(CarefulResumePhase::Validating, trigger, now);
    }

    /// §3.5: half the validated pipe, until the jump's packets are
    /// acknowledged.
    fn retreat(&mut self, now: Instant) {
        self.retreat_on(now, CarefulResumeTrigger::PacketLoss);
    }

    /// Safe Retreat, for `trigger`.
    fn retreat_on(&mut self, now: Instant, trigger: CarefulResumeTrigger) {
        if self.last_unvalidated_sent.is_none() {
            self.last_unvalidated_sent = self.last_sent;
        }
        self.held_cwnd =
            scale_window(self.pipesize, RETREAT_FRACTION).max(minimum_window(self.mss));
        self.retreated = true;
        self.inner.set_window(self.held_cwnd, None);
        self.enter(CarefulResumePhase::SafeRetreat, trigger, now);
    }

    /// The losses since the jump say it overfilled the path
    /// ([`CarefulResumeConfig::retreat_loss_permille`]), or an RTT since
    /// it shows a queue the saved path did not have (above
    /// [`QUEUED_RTT_FRACTION`] of the saved one), in which any congestive
    /// loss is the queue's.
    fn jump_overfilled(&self) -> bool {
        let permille = u128::from(self.config.retreat_loss_permille);
        let (num, den) = QUEUED_RTT_FRACTION;
        permille == 0
            || self.jump_max_rtt > self.saved.min_rtt * num / den
            || u128::from(self.jump_lost) * 1000 > permille * u128::from(self.jump_sent)
    }

    fn validating(&self) -> bool {
        matches!(
            self.phase,
            CarefulResumePhase::Unvalidated | CarefulResumePhase::Validating
        )
    }

    fn unvalidated_packet_acked(&self, sent: Option<Instant>, ack: &AckEvent) -> bool {
        sent.is_some_and(|sent| ack.largest_acked_sent_time >= sent)
    }
}

impl CongestionControl for CarefulResume {
    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        self.inner.on_sent(now, bytes, bytes_in_flight);
        self.last_sent = Some(now);
        if self.validating() {
            self.jump_sent += bytes;
        }
        match self.phase {
            CarefulResumePhase::Reconnaissance => {
                self.cwnd_limited = bytes_in_flight + self.mss > self.inner.window();
                if self.cwnd_limited && self.reconnaissance_window.is_none() {
                    self.reconnaissance_window = Some(bytes_in_flight);
                }
                self.try_jump(now, bytes_in_flight);
            }
            CarefulResumePhase::Unvalidated => {
                self.first_unvalidated_sent.get_or_insert(now);
                self.last_unvalidated_sent = Some(now);
                // "FS = CWND": the whole jump is in flight.
                if bytes_in_flight + self.mss > self.held_cwnd {
                    self.leave_unvalidated(
                        now,
                        bytes_in_flight,
                        CarefulResumeTrigger::LastUnvalidatedPacketSent,
                    );
                }
            }
            _ => {}
        }
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        self.inner.on_ack(ack);
        match self.phase {
            CarefulResumePhase::Reconnaissance => {
                if self.reconnaissance_window.is_some() {
                    self.reconnaissance_acked += ack.acked_bytes;
                }
                if !ack.rtt_sampled && self.current_rtt.is_none() {
                    return;
                }
                let current = ack.rtt.min;
                let saved = self.saved.min_rtt;
                let upper = self.config.rtt_upper_factor.max(1);
                if current < saved / RTT_LOWER_DIVISOR || current > saved * upper {
                    self.enter(
                        CarefulResumePhase::Normal,
                        CarefulResumeTrigger::RttNotValidated,
                        ack.now,
                    );
                    return;
                }
                self.current_rtt = Some(current);
                self.app_limited = ack.app_limited;
                if ack.app_limited {
                    self.cwnd_limited = false;
                }
                self.try_jump(ack.now, ack.bytes_in_flight);
            }
            CarefulResumePhase::Unvalidated => {
                self.pipesize += ack.acked_bytes;
                self.jump_max_rtt = self.jump_max_rtt.max(ack.rtt.latest);
                if self.unvalidated_packet_acked(self.first_unvalidated_sent, ack) {
                    self.leave_unvalidated(
                        ack.now,
                        ack.bytes_in_flight,
                        CarefulResumeTrigger::FirstUnvalidatedPacketAcknowledged,
                    );
                }
            }
            CarefulResumePhase::Validating => {
                self.pipesize += ack.acked_bytes;
                self.jump_max_rtt = self.jump_max_rtt.max(ack.rtt.latest);
                if self.unvalidated_packet_acked(self.last_unvalidated_sent, ack) {
                    self.enter(
                        CarefulResumePhase::Normal,
                        CarefulResumeTrigger::LastUnvalidatedPacketAcknowledged,
                        ack.now,
                    );
                }
            }
            CarefulResumePhase::SafeRetreat => {
                self.pipesize += ack.acked_bytes;
                if self.unvalidated_packet_acked(self.last_unvalidated_sent, ack) {
                    let ssthresh = scale_window(self.pipesize, RETREAT_SSTHRESH_FRACTION)
                        .max(minimum_window(self.mss));
                    self.inner.set_window(self.held_cwnd, Some(ssthresh));
                    self.enter(
                        CarefulResumePhase::Normal,
                        CarefulResumeTrigger::ExitRecovery,
                        ack.now,
                    );
                }
            }
            CarefulResumePhase::Normal => {}
        }
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        let verdict = self.inner.on_congestion(ev);
        let congestive = verdict == LossVerdict::Congestive || self.config.retreat_on_random_loss;
        match self.phase {
            CarefulResumePhase::Reconnaissance if congestive => {
                // §3.2: congestion before the jump: no Careful Resume.
                self.enter(
                    CarefulResumePhase::Normal,
                    CarefulResumeTrigger::PacketLoss,
                    ev.now,
                );
            }
            CarefulResumePhase::Unvalidated | CarefulResumePhase::Validating if ev.persistent => {
                // Persistent congestion: the controller has collapsed its
                // window, which is below any retreat.
                self.retreated = true;
                self.enter(
                    CarefulResumePhase::Normal,
                    CarefulResumeTrigger::PacketLoss,
                    ev.now,
                );
            }
            CarefulResumePhase::Unvalidated | CarefulResumePhase::Validating if congestive => {
                if self.jump_overfilled() {
                    self.retreat(ev.now);
                } else {
                    self.congestion_seen = true;
                }
            }
            _ => {}
        }
        verdict
    }

    fn on_corruption(&mut self, ev: &CorruptionEvent) {
        self.inner.on_corruption(ev);
    }

    /// CE marks are congestion (RFC 9959 §3.3 names ECN-CE beside loss):
    /// before the jump they end Careful Resume, in Unvalidated or
    /// Validating they retreat at once, whatever `retreat_loss_permille`
    /// allows a loss (a mark is never the link's).
    fn on_ecn(&mut self, ev: &EcnEvent) {
        self.inner.on_ecn(ev);
        match self.phase {
            CarefulResumePhase::Reconnaissance => {
                self.enter(
                    CarefulResumePhase::Normal,
                    CarefulResumeTrigger::CongestionExperienced,
                    ev.now,
                );
            }
            CarefulResumePhase::Unvalidated | CarefulResumePhase::Validating => {
                self.retreat_on(ev.now, CarefulResumeTrigger::CongestionExperienced);
            }
            _ => {}
        }
    }

    fn on_ecn_validated(&mut self, validated: bool) {
        self.inner.on_ecn_validated(validated);
    }

    fn ect(&self) -> Ect {
        self.inner.ect()
    }

    fn on_packets_lost(&mut self, ev: &PacketsLost) {
        self.inner.on_packets_lost(ev);
        if !self.validating() {
            return;
        }
        self.jump_lost += ev.packets.iter().map(|p| p.size).sum::<u64>();
        // Declarations within a recovery period the controller already
        // judged congestive reach only here.
        if self.congestion_seen && self.jump_overfilled() {
            self.retreat(ev.now);
        }
    }

    fn on_spurious_congestion(&mut self, ev: &SpuriousCongestionEvent) {
        self.inner.on_spurious_congestion(ev);
    }

    fn verdict_basis(&self) -> Option<VerdictBasis> {
        self.inner.verdict_basis()
    }

    fn window(&self) -> u64 {
        match self.phase {
            CarefulResumePhase::Unvalidated | CarefulResumePhase::SafeRetreat => self.held_cwnd,
            _ => self.inner.window(),
        }
    }

    fn ssthresh(&self) -> u64 {
        self.inner.ssthresh()
    }

    fn pacing_rate(&self) -> Option<u64> {
        match (self.phase, self.current_rtt) {
            // §3.3: the jump is paced over the current RTT.
            (CarefulResumePhase::Unvalidated, Some(rtt)) => {
                let rtt_us = rtt.as_micros().max(1);
                Some((u128::from(self.jump_cwnd) * 1_000_000 / rtt_us) as u64)
            }
            _ => self.inner.pacing_rate(),
        }
    }

    fn recovery_policy(&self) -> RecoveryPolicy {
        self.inner.recovery_policy()
    }

    fn metrics(&self) -> Metrics {
        let mut metrics = self.inner.metrics();
        metrics.cwnd = self.window();
        metrics
            .fields
            .insert("careful_resume_phase".into(), f64::from(self.phase.index()));
        metrics
            .fields
            .insert("careful_resume_pipesize".into(), self.pipesize as f64);
        metrics
    }

    /// Packets of a new size (path MTU discovery): the inner controller
    /// counts in them, and a held window keeps its floor in them. The
    /// saved and jump windows are bytes and stay as they are.
    fn set_mss(&mut self, mss: u64) {
        self.mss = mss;
        self.inner.set_mss(mss);
        self.held_cwnd = match self.phase {
            CarefulResumePhase::Unvalidated | CarefulResumePhase::SafeRetreat => {
                self.held_cwnd.max(minimum_window(mss))
            }
            _ => self.held_cwnd,
        };
    }

    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.inner.set_window(cwnd, ssthresh);
    }

    fn seed_path_model(&mut self, bandwidth: f64, min_rtt: Duration) {
        self.inner.seed_path_model(bandwidth, min_rtt);
    }

    fn set_startup_target(&mut self, bandwidth: f64) {
        self.inner.set_startup_target(bandwidth);
    }

    fn careful_resume(&self) -> Option<CarefulResumeStatus> {
        Some(CarefulResumeStatus {
            phase: self.phase,
            saved_cwnd: self.saved.cwnd,
            saved_rtt_us: self.saved.min_rtt.as_micros() as u64,
            jump_cwnd: self.jump_cwnd,
            pipesize: self.pipesize,
            jumped: self.jump_cwnd > 0,
            retreated: self.retreated,
        })
    }

    fn drain_careful_resume_changes(&mut self) -> Vec<CarefulResumeChange> {
        std::mem::take(&mut self.changes)
    }
}

#[cfg(test)]
mod tests;
