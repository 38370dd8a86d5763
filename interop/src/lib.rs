//! Baseline runs of a real QUIC stack over sift-link.
