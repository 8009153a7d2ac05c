//! Reading a host's serialized latency histogram (HdrHistogram V2, plain or deflated) without
//! trusting it: every length in its headers is checked against the bytes received, the
//! inflated size is capped, and its bounds are held to what a worker's histogram can have, so
//! nothing is allocated for sizes a host merely claims.

use std::io::Read;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;

const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// cookie, payload length, normalizing offset, digits, lowest, highest, conversion ratio.
const V2_HEADER: usize = 40;
/// The largest inflated histogram accepted (a worker's are kilobytes).
pub const MAX_INFLATED: usize = 16 << 20;
/// Workers record with 3 significant digits (hdrhistogram's usual precision).
const MAX_DIGITS: u32 = 3;
/// About 100 days in microseconds: the highest trackable value a histogram may declare.
const MAX_HIGHEST: u64 = 1 << 43;

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Checks an uncompressed V2 histogram's header against its bytes.
fn check_v2(b: &[u8]) -> Result<(), String> {
    if b.len() < V2_HEADER {
        return Err(format!(
            "{} bytes is shorter than a histogram header",
            b.len()
        ));
    }
    let payload = be_u32(b, 4).unwrap_or(u32::MAX) as usize;
    if payload > b.len() - V2_HEADER {
        return Err(format!(
            "its header claims a payload of {payload} bytes, {} follow",
            b.len() - V2_HEADER
        ));
    }
    let digits = be_u32(b, 12).unwrap_or(u32::MAX);
    if digits > MAX_DIGITS {
        return Err(format!(
            "{digits} significant digits (at most {MAX_DIGITS})"
        ));
    }
    let highest = be_u64(b, 24).unwrap_or(u64::MAX);
    if highest > MAX_HIGHEST {
        return Err(format!(
            "a highest trackable value of {highest} (at most {MAX_HIGHEST})"
        ));
    }
    Ok(())
}

/// Checks a serialized histogram before it is deserialized.
pub fn check(bytes: &[u8]) -> Result<(), String> {
    match be_u32(bytes, 0) {
        Some(V2_COOKIE) => check_v2(bytes),
        Some(V2_COMPRESSED_COOKIE) => {
            let claimed = be_u32(bytes, 4).unwrap_or(u32::MAX) as usize;
            if claimed != bytes.len() - 8 {
                return Err(format!(
                    "its header claims {claimed} compressed bytes, {} follow",
                    bytes.len() - 8
                ));
            }
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[8..])
                .take(MAX_INFLATED as u64 + 1)
                .read_to_end(&mut inflated)
                .map_err(|e| format!("it does not inflate: {e}"))?;
            if inflated.len() > MAX_INFLATED {
                return Err(format!("it inflates to more than {MAX_INFLATED} bytes"));
            }
            if be_u32(&inflated, 0) != Some(V2_COOKIE) {
                return Err("its inflated form is not a histogram".into());
            }
            check_v2(&inflated)
        }
        _ => Err("it is not an HdrHistogram V2 histogram".into()),
    }
}

/// A host's serialized histogram; empty bytes = none.
pub fn read(bytes: &[u8]) -> Result<Option<Histogram<u64>>, String> {
    if bytes.is_empty() {
        return Ok(None);
    }
    check(bytes)?;
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map(Some)
        .map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer, V2Serializer};

    fn sample() -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).expect("histogram");
        for v in [120, 480, 2_000, 95_000] {
            h.record(v).expect("record");
        }
        h
    }

    #[test]
    fn a_worker_histogram_reads_back_in_both_forms() {
        let h = sample();
        let mut plain = Vec::new();
        V2Serializer::new().serialize(&h, &mut plain).expect("v2");
        let mut deflated = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut deflated)
            .expect("deflate");
        for bytes in [plain, deflated] {
            let back = read(&bytes).expect("readable").expect("some");
            assert_eq!(back.len(), 4);
            assert_eq!(back.value_at_quantile(1.0), h.value_at_quantile(1.0));
        }
        assert!(read(&[]).expect("none").is_none());
    }

    #[test]
    fn claimed_sizes_beyond_the_bytes_are_refused_before_any_allocation() {
        let h = sample();
        let mut plain = Vec::new();
        V2Serializer::new().serialize(&h, &mut plain).expect("v2");
        // payload_len = 0xFFFFFFFF: the bomb.
        let mut bomb = plain.clone();
        bomb[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = read(&bomb).expect_err("bomb");
        assert!(e.contains("claims a payload of 4294967295 bytes"), "{e}");
        // The same bomb inside a deflated histogram.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &bomb).expect("deflate");
        let inner = z.finish().expect("deflate");
        let mut wrapped = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        wrapped.extend((inner.len() as u32).to_be_bytes());
        wrapped.extend(&inner);
        let e = read(&wrapped).expect_err("deflated bomb");
        assert!(e.contains("claims a payload"), "{e}");
        // A compressed length that is not the bytes sent.
        wrapped[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(
            read(&wrapped)
                .expect_err("length")
                .contains("compressed bytes")
        );
        // Bounds no worker records with: a counts array of gigabytes.
        let mut wide = plain.clone();
        wide[12..16].copy_from_slice(&5u32.to_be_bytes());
        wide[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(
            read(&wide)
                .expect_err("digits")
                .contains("significant digits")
        );
        let mut high = plain;
        high[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(
            read(&high)
                .expect_err("highest")
                .contains("highest trackable")
        );
        // A deflate bomb: zeros that inflate past the cap.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let mut head = V2_COOKIE.to_be_bytes().to_vec();
        head.extend([0u8; 36]);
        std::io::Write::write_all(&mut z, &head).expect("deflate");
        std::io::Write::write_all(&mut z, &vec![0u8; MAX_INFLATED + 1]).expect("deflate");
        let inner = z.finish().expect("deflate");
        let mut zip = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        zip.extend((inner.len() as u32).to_be_bytes());
        zip.extend(&inner);
        assert!(
            read(&zip)
                .expect_err("zip bomb")
                .contains("inflates to more than")
        );
        assert!(read(b"garbage!").is_err());
    }
}
