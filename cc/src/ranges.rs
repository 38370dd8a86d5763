//! Each configuration parameter's valid range, stated once.
//!
//! A controller's config lists its ranges in one table; `validate` reports
//! the first value outside its range and `sanitized` puts a value back in
//! range, both read from that table, so the two can never disagree.

use std::fmt::Display;

use crate::InvalidCcConfig;

/// Which values a parameter takes, and what `sanitized` makes of another.
pub(crate) enum Valid<T> {
    /// This value or more; a smaller one becomes this value.
    AtLeast(T),
    /// The values the test accepts; another becomes the default's value.
    Where(fn(T) -> bool),
}

/// One parameter of config `C`: its name as spelt in scenario files, where
/// it lives, its range, and the range in words for the error.
pub(crate) struct Range<C, T> {
    pub field: &'static str,
    pub value: fn(&mut C) -> &mut T,
    pub valid: Valid<T>,
    pub expected: &'static str,
}

/// A [`Range`] of any value type, so one table can hold them all.
pub(crate) trait Check<C> {
    /// The error for `config`'s value, if it is out of range.
    fn check(&self, algorithm: &'static str, config: &mut C) -> Option<InvalidCcConfig>;
    /// Puts `config`'s value back in range, from `defaults` where the
    /// range says so.
    fn repair(&self, config: &mut C, defaults: &mut C);
}

impl<C, T: Copy + PartialOrd> Range<C, T> {
    fn holds(&self, value: T) -> bool {
        match self.valid {
            Valid::AtLeast(min) => value >= min,
            Valid::Where(test) => test(value),
        }
    }
}

impl<C, T: Copy + PartialOrd + Display> Check<C> for Range<C, T> {
    fn check(&self, algorithm: &'static str, config: &mut C) -> Option<InvalidCcConfig> {
        let value = *(self.value)(config);
        (!self.holds(value))
            .then(|| InvalidCcConfig::new(algorithm, self.field, value, self.expected))
    }

    fn repair(&self, config: &mut C, defaults: &mut C) {
        let value = *(self.value)(config);
        if self.holds(value) {
            return;
        }
        *(self.value)(config) = match self.valid {
            Valid::AtLeast(min) => min,
            Valid::Where(_) => *(self.value)(defaults),
        };
    }
}

/// A config's table: its ranges, in the order `validate` checks them.
pub(crate) type Ranges<C> = [&'static dyn Check<C>];

/// The first parameter of `config` outside its range in `ranges`.
pub(crate) fn validate<C: Clone>(
    algorithm: &'static str,
    config: &C,
    ranges: &Ranges<C>,
) -> Result<(), InvalidCcConfig> {
    let mut config = config.clone();
    match ranges
        .iter()
        .find_map(|range| range.check(algorithm, &mut config))
    {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// `config` with every parameter outside its range in `ranges` put back
/// in it.
pub(crate) fn sanitized<C: Default>(mut config: C, ranges: &Ranges<C>) -> C {
    let mut defaults = C::default();
    for range in ranges {
        range.repair(&mut config, &mut defaults);
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Config {
        rounds: u64,
        gain: f64,
    }

    impl Default for Config {
        fn default() -> Self {
            Self {
                rounds: 3,
                gain: 0.5,
            }
        }
    }

    const RANGES: &Ranges<Config> = &[
        &Range {
            field: "rounds",
            value: |c: &mut Config| &mut c.rounds,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
        &Range {
            field: "gain",
            value: |c: &mut Config| &mut c.gain,
            valid: Valid::Where(|gain| gain > 0.0 && gain < 1.0),
            expected: "a fraction",
        },
    ];

    #[test]
    fn validate_reports_the_first_value_out_of_range_in_table_order() {
        let bad = Config {
            rounds: 0,
            gain: f64::NAN,
        };
        let error = validate("toy", &bad, RANGES).unwrap_err();
        assert_eq!(
            (error.algorithm, error.field, error.value.as_str()),
            ("toy", "rounds", "0")
        );
        let error = validate("toy", &Config { rounds: 2, ..bad }, RANGES).unwrap_err();
        assert_eq!((error.field, error.value.as_str()), ("gain", "NaN"));
        assert_eq!(validate("toy", &Config::default(), RANGES), Ok(()));
    }

    #[test]
    fn sanitized_raises_to_the_bound_or_falls_back_to_the_default_and_then_validates() {
        let bad = Config {
            rounds: 0,
            gain: 1.5,
        };
        // rounds: at least 1 → 1 (not the default 3); gain → the default.
        let repaired = sanitized(bad, RANGES);
        assert_eq!(
            repaired,
            Config {
                rounds: 1,
                gain: 0.5
            }
        );
        assert_eq!(validate("toy", &repaired, RANGES), Ok(()));
        // Values in range are left alone.
        let good = Config {
            rounds: 7,
            gain: 0.9,
        };
        assert_eq!(sanitized(good.clone(), RANGES), good);
    }
}
