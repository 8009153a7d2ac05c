//! Text forms of binary column values, for `\gset`/`\aset` under the extended and prepared
//! protocols (the driver receives results in binary).

use std::error::Error as StdError;
use std::fmt::Write as _;

use tokio_postgres::types::Type;

type BoxError = Box<dyn StdError + Sync + Send>;

fn fixed<const N: usize>(raw: &[u8]) -> Result<[u8; N], BoxError> {
    raw.try_into()
        .map_err(|_| "invalid binary value length".into())
}

/// The value as PostgreSQL would print it, for the common scalar types.
pub fn binary_to_text(ty: &Type, raw: &[u8]) -> Result<String, BoxError> {
    Ok(match *ty {
        Type::BOOL => if raw.first() == Some(&1) { "t" } else { "f" }.to_string(),
        Type::INT2 => i16::from_be_bytes(fixed(raw)?).to_string(),
        Type::INT4 => i32::from_be_bytes(fixed(raw)?).to_string(),
        Type::INT8 => i64::from_be_bytes(fixed(raw)?).to_string(),
        Type::OID => u32::from_be_bytes(fixed(raw)?).to_string(),
        Type::FLOAT4 => float(f64::from(f32::from_be_bytes(fixed(raw)?))),
        Type::FLOAT8 => float(f64::from_be_bytes(fixed(raw)?)),
        Type::NUMERIC => numeric(raw)?,
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::UNKNOWN
        | Type::JSON
        | Type::CHAR => String::from_utf8(raw.to_vec())?,
        _ => {
            return Err(format!(
                "cannot store a value of type {} in a variable with this query mode (use -M simple or cast to text)",
                ty.name()
            )
            .into());
        }
    })
}

fn float(d: f64) -> String {
    if d.is_nan() {
        "NaN".into()
    } else if d.is_infinite() {
        if d > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        d.to_string()
    }
}

/// NUMERIC's binary form: ndigits, weight, sign, dscale, then base-10000 digits.
fn numeric(raw: &[u8]) -> Result<String, BoxError> {
    let word = |i: usize| -> Result<u16, BoxError> {
        raw.get(i * 2..i * 2 + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "invalid numeric".into())
    };
    let (ndigits, weight, sign, dscale) = (
        word(0)? as usize,
        word(1)? as i16,
        word(2)?,
        word(3)? as usize,
    );
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<u16> = (0..ndigits)
        .map(|i| word(4 + i))
        .collect::<Result<_, _>>()?;
    let digit = |i: i32| -> u16 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0)
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    // Integer part: digit groups 0..=weight.
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=i32::from(weight) {
            let d = digit(i);
            if i == 0 {
                let _ = write!(s, "{d}");
            } else {
                let _ = write!(s, "{d:04}");
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut i = i32::from(weight) + 1;
        while frac.len() < dscale {
            let _ = write!(frac, "{:04}", digit(i));
            i += 1;
        }
        frac.truncate(dscale);
        s.push_str(&frac);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(words: &[u16]) -> String {
        let raw: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        binary_to_text(&Type::NUMERIC, &raw).unwrap()
    }

    #[test]
    fn numerics_print_like_postgres() {
        // 12345.678: digits [1, 2345, 6780], weight 1, dscale 3
        assert_eq!(num(&[3, 1, 0, 3, 1, 2345, 6780]), "12345.678");
        assert_eq!(num(&[1, 0xFFFF, 0x4000, 4, 12]), "-0.0012");
        assert_eq!(num(&[0, 0, 0, 0]), "0");
        assert_eq!(num(&[1, 2, 0, 0, 7]), "700000000");
        assert_eq!(num(&[0, 0, 0xC000, 0]), "NaN");
    }

    #[test]
    fn scalars() {
        assert_eq!(
            binary_to_text(&Type::INT4, &42i32.to_be_bytes()).unwrap(),
            "42"
        );
        assert_eq!(
            binary_to_text(&Type::INT8, &(-7i64).to_be_bytes()).unwrap(),
            "-7"
        );
        assert_eq!(
            binary_to_text(&Type::FLOAT8, &2.5f64.to_be_bytes()).unwrap(),
            "2.5"
        );
        assert_eq!(binary_to_text(&Type::BOOL, &[1]).unwrap(), "t");
        assert_eq!(binary_to_text(&Type::TEXT, b"abc").unwrap(), "abc");
        assert!(binary_to_text(&Type::INT4, &[1, 2]).is_err());
        assert!(binary_to_text(&Type::TIMESTAMP, &[0; 8]).is_err());
    }
}
