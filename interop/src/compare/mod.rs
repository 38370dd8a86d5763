//! Runner placeholder
