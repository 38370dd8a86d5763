//! Shared pieces of the sift command-line tools.
