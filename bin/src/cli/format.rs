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
}
