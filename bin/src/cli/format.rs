//! Numbers for people: sizes, rates and durations.

/// Bytes in binary units: `512 B`, `1.5 KiB`, `4.77 MiB`, `1.00 GiB`.
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if count < 1024 {
        return format!("{count} B");
    }
    let mut value = count as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// Bits per second in decimal units, as iperf3 shows them: `9.87 Mb/s`.
pub fn rate(bits_per_second: f64) -> String {
    const UNITS: [&str; 4] = ["b/s", "kb/s", "Mb/s", "Gb/s"];
    let mut value = bits_per_second.max(0.0);
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// Microseconds as milliseconds: `51.2 ms`.
pub fn micros_as_ms(micros: u64) -> String {
    format!("{:.1} ms", micros as f64 / 1000.0)
}

/// A size a person typed: bytes, or with a binary suffix `K`, `M`, `G`,
/// `T` (also `KiB`…`TiB`): `16G` is 16 GiB. For `--max-upload-bytes`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits_end = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(digits_end);
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => return Err(format!("{text:?} is not a size: expected bytes, or a number with K, M, G or T (powers of 1024), like 16G")),
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size: it must start with a whole number"))?;
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_rates_read_naturally() {
        assert_eq!(bytes(512), "512 B");
        // 5 000 000 / 1024² = 4.768… MiB
        assert_eq!(bytes(5_000_000), "4.77 MiB");
        assert_eq!(rate(22_912_000.0), "22.91 Mb/s");
        assert_eq!(rate(999.0), "999.00 b/s");
        assert_eq!(micros_as_ms(51_234), "51.2 ms");
    }

    #[test]
    fn sizes_parse_in_bytes_or_binary_units() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("16G"), Ok(16 << 30));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2 t"), Ok(2 << 40));
        assert!(parse_bytes("1.5G").is_err());
        assert!(parse_bytes("G").is_err());
        assert!(parse_bytes("10X").is_err());
        assert!(parse_bytes("99999999999T")
            .unwrap_err()
            .contains("too large"));
    }
}
