//! The comparison runner behind `sift-compare`.
//!
//! A [`plan::Plan`] lists every unit of work in a fixed order: for each
//! repetition, for each link spec of `links.toml`, every controller of both
//! stacks (sift's with corruption notices on and off) on that spec with the
//! same seed; then the loopback efficiency runs. [`execute`] runs one unit
//! as real processes (`sift-link` between a server and a client, exactly as
//! a user would run them) and [`results`] keeps what happened; [`summary`]
//! turns runs into medians and ratios (and, with [`ceiling`], into shares
//! of the most a link allows), [`report`] into markdown and
//! [`chart`] into SVG. `--shard K/N` runs every N-th unit
//! (`sift::lab::Shard`); `merge` joins shard results into the same report.
//!
//! Owns no transport logic: it meets sift and quiche only through their
//! binaries ([`binaries`]) and their `--json` lines (`crate::flow`).

pub mod binaries;
pub mod ceiling;
pub mod chart;
pub mod execute;
pub mod links;
pub mod plan;
pub mod process;
pub mod report;
pub mod results;
pub mod summary;
