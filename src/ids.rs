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
    uuid_layout(rand::random(), 4)
}

/// A run identity from content (FNV-1a 128 of the parts, each preceded by
/// its length, in the UUID version 8 layout): an import of the same data
/// is the same run, so importing it twice stores it once.
pub fn content_uuid(parts: &[&[u8]]) -> String {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    let mut eat = |b: u8| {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000000001000000000000000000013b);
    };
    for p in parts {
        for b in (p.len() as u64).to_le_bytes() {
            eat(b);
        }
        for &b in *p {
            eat(b);
        }
    }
    uuid_layout(h, 8)
}

/// 128 bits as a UUID of `version`, variant 10xx.
fn uuid_layout(mut b: u128, version: u128) -> String {
    b = (b & !(0xf << 76)) | (version << 76);
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
    fn content_uuids_follow_the_content() {
        let a = content_uuid(&[b"hyperfine", b"{...}"]);
        assert_eq!(a, content_uuid(&[b"hyperfine", b"{...}"]));
        assert_ne!(a, content_uuid(&[b"hyperfine", b"{..}"]));
        // Parts are delimited: moving a byte between them changes it.
        assert_ne!(content_uuid(&[b"ab", b"c"]), content_uuid(&[b"a", b"bc"]));
        assert_eq!(&a[14..15], "8", "version 8: {a}");
        assert_eq!(new_run_uuid().len(), 36);
    }

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
