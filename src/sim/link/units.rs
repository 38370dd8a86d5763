//! tc's units, read and written exactly: times, rates, sizes and
//! probabilities, for the netem parser and for the stages that read their
//! own options (`corrupt-where header=5%`). Decimals are parsed as exact integers scaled by the unit,
//! so `1.5ms` is exactly 1 500 000 ns and `1600kbit` exactly 1 600 000 bit/s.

use std::time::Duration;

/// An exact decimal: `digits` × 10^(−fraction_digits).
fn parse_decimal(text: &str) -> Option<(u128, u32)> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) || frac.len() > 18 {
        return None;
    }
    let mut digits: u128 = 0;
    for c in int.chars().chain(frac.chars()) {
        digits = digits
            .checked_mul(10)?
            .checked_add(u128::from(c.to_digit(10)?))?;
    }
    Some((digits, u32::try_from(frac.len()).ok()?))
}

/// `value` × `scale`, rounded to the nearest integer, for an exact decimal.
fn scaled(text: &str, scale: u128) -> Option<u128> {
    let (digits, fraction_digits) = parse_decimal(text)?;
    let divisor = 10u128.pow(fraction_digits);
    let product = digits.checked_mul(scale)?;
    Some(product.checked_add(divisor / 2)? / divisor)
}

/// Splits `20ms` into `("20", "ms")`.
fn split_unit(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// A time as tc reads it (`get_time`): s/sec/secs, ms/msec/msecs,
/// us/usec/usecs (or no unit), ns/nsec/nsecs.
pub(crate) fn time(text: &str) -> Result<Duration, String> {
    let bad = || "not a time (expected a number with s, ms, us or ns, e.g. 20ms)".to_string();
    let (number, unit) = split_unit(text);
    let nanos_per_unit: u128 = match unit {
        "s" | "sec" | "secs" => 1_000_000_000,
        "ms" | "msec" | "msecs" => 1_000_000,
        "" | "us" | "usec" | "usecs" => 1_000,
        "ns" | "nsec" | "nsecs" => 1,
        _ => return Err(bad()),
    };
    let nanos = scaled(number, nanos_per_unit)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(bad)?;
    Ok(Duration::from_nanos(nanos))
}

/// A rate in bits per second as tc reads it (`get_rate`, case-insensitive):
/// bit (or no unit), kbit… tbit (×1000), kibit… tibit (×1024), and the
/// same in bytes per second with `bps`.
pub(crate) fn rate(text: &str) -> Result<u64, String> {
    if text.ends_with('%') {
        return Err(
            "a rate relative to the device needs a device: give bits per second (e.g. 10mbit)"
                .to_string(),
        );
    }
    let bad = || {
        "not a rate (expected a number with bit, kbit, mbit, gbit, bps, kbps, mbps…, e.g. 10mbit)"
            .to_string()
    };
    let (number, unit) = split_unit(text);
    let bits_per_unit: u128 = match unit.to_ascii_lowercase().as_str() {
        "" | "bit" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        "tbit" => 1_000_000_000_000,
        "kibit" => 1 << 10,
        "mibit" => 1 << 20,
        "gibit" => 1 << 30,
        "tibit" => 1 << 40,
        "bps" => 8,
        "kbps" => 8_000,
        "mbps" => 8_000_000,
        "gbps" => 8_000_000_000,
        "tbps" => 8_000_000_000_000,
        "kibps" => 8 << 10,
        "mibps" => 8 << 20,
        "gibps" => 8 << 30,
        "tibps" => 8 << 40,
        _ => return Err(bad()),
    };
    let bits = scaled(number, bits_per_unit)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(bad)?;
    if bits == 0 {
        return Err("the rate must be > 0 (omit rate for an unlimited link)".to_string());
    }
    Ok(bits)
}

/// A size in bytes as tc reads it (`get_size`): b (or no unit), k/kb,
/// m/mb, g/gb (×1024).
pub(crate) fn size(text: &str) -> Result<u64, String> {
    let bad = || "not a size (expected bytes, e.g. 64000 or 64kb)".to_string();
    let (number, unit) = split_unit(text);
    let bytes_per_unit: u128 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        _ => return Err(bad()),
    };
    scaled(number, bytes_per_unit)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(bad)
}

/// A probability written `N%` (0 ≤ N ≤ 100) or as a plain fraction in
/// 0..=1 (`0.01`, `1e-5`). A bare `1` is refused: tc would read it as 1%.
pub(crate) fn parse_probability(text: &str) -> Result<f64, String> {
    let bad =
        || "not a probability (expected a percentage like 1% or a fraction like 0.01)".to_string();
    if let Some(percent) = text.strip_suffix('%') {
        let value: f64 = percent.parse().map_err(|_| bad())?;
        if !(0.0..=100.0).contains(&value) || percent.starts_with('-') {
            return Err("a percentage must be within 0%..=100%".to_string());
        }
        return Ok(value / 100.0);
    }
    let value: f64 = text.parse().map_err(|_| bad())?;
    if !value.is_finite() || !text.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    if !(0.0..=1.0).contains(&value) {
        return Err(format!(
            "a plain number is a fraction in 0..=1 (write {text}% for percent)"
        ));
    }
    if text.chars().all(|c| c.is_ascii_digit()) && value >= 1.0 {
        return Err(format!(
            "ambiguous: tc reads a bare {text} as {text}%, sift as a fraction; write {text}% or 1.0"
        ));
    }
    Ok(value)
}

/// A fraction printed so that `parse_probability` reads back the same f64
/// (Rust's shortest round-trip form, with `.0` added to whole numbers).
pub(crate) fn format_fraction(value: f64) -> String {
    let text = format!("{value}");
    if text.chars().all(|c| c.is_ascii_digit()) {
        format!("{text}.0")
    } else {
        text
    }
}

/// A duration in the largest unit that states it exactly.
pub(crate) fn format_time(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        "0s".to_string()
    } else if nanos % 1_000_000_000 == 0 {
        format!("{}s", nanos / 1_000_000_000)
    } else if nanos % 1_000_000 == 0 {
        format!("{}ms", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        format!("{}us", nanos / 1_000)
    } else {
        format!("{nanos}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_scale_exactly() {
        // 1.5 ms = 1 500 000 ns exactly; 0.1 mbit = 100 000 bit/s exactly.
        assert_eq!(time("1.5ms"), Ok(Duration::from_nanos(1_500_000)));
        assert_eq!(rate("0.1mbit"), Ok(100_000));
        assert_eq!(size("1.5kb"), Ok(1536));
        assert!(time("1.2.3ms").is_err() && time("ms").is_err() && time("-1ms").is_err());
    }

    #[test]
    fn fractions_and_times_print_back_to_the_same_value() {
        for value in [0.0, 1.0, 0.01, 1e-5, 0.95, 1.0 / 3.0, 5e-324] {
            assert_eq!(parse_probability(&format_fraction(value)), Ok(value));
        }
        for nanos in [0, 1, 999, 1_000, 1_500_000, 2_000_000_000, 123_456_789_012] {
            let d = Duration::from_nanos(nanos);
            assert_eq!(time(&format_time(d)), Ok(d));
        }
    }
}
