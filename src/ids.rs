//! Identities and timestamps of records, below both the runner and the
//! stores: the wall clock as Unix seconds, the content hash that names a
//! campaign's plan, and the random identity of a run that makes a replayed
//! event stream idempotent.

/// Wall-clock time as Unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Content hash of a plan's text (FNV-1a 64, 16 hex digits): with the
/// plan's name and a generation, a campaign's identity.
pub fn plan_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// A new run identity: 128 random bits as a UUID (version 4 layout), so
/// runs made on different hosts never collide when their events meet in
/// one store.
pub fn new_run_uuid() -> String {
    let mut b: u128 = rand::random();
    // Version 4, variant 10xx.
    b = (b & !(0xf << 76)) | (0x4 << 76);
    b = (b & !(0x3 << 62)) | (0x2 << 62);
    let h = format!("{b:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A seed from the clock when the user gave none; it is recorded and
/// printed so the order can be replayed with `--seed`.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (std::process::id() as u64) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_hash_is_fnv1a() {
        // FNV-1a 64 of "" and "a" (published test vectors).
        assert_eq!(plan_hash(""), "cbf29ce484222325");
        assert_eq!(plan_hash("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn run_uuids_are_v4_and_distinct() {
        let a = new_run_uuid();
        let b = new_run_uuid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4", "{a}");
        assert!("89ab".contains(&a[19..20]), "{a}");
    }
}
