//! Milliseconds since the Unix epoch as an ISO 8601 UTC timestamp (what ATIF's `timestamp`
//! takes), without a date library: the civil-from-days conversion of the proleptic Gregorian
//! calendar (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").

/// `ms` since 1970-01-01T00:00:00Z as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// (year, month 1–12, day 1–31) of day `z` counted from 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn known_instants() {
        // Values from `date -u -d @<seconds> +%Y-%m-%dT%H:%M:%S`.
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_764_580_260_123), "2025-12-01T09:11:00.123Z");
        assert_eq!(iso8601(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }
}
