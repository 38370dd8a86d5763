//! Prague's rules, each from RFC 9331 §4.3 or Linux Prague, with the
//! arithmetic in the comments.
