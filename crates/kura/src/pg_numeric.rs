//! PostgreSQL's binary `numeric` format (base-10000 digit groups with a weight and
//! a display scale) to and from kura's scaled integers.

/// Sign word of a positive number.
const POS: u16 = 0x0000;
/// Sign word of a negative number.
const NEG: u16 = 0x4000;

/// Binary `numeric` for `v / 10^scale`.
pub fn encode(v: i128, scale: u8, out: &mut Vec<u8>) {
    let digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    // Split the decimal digits at the point, padding so both sides fill whole
    // groups of four: the point must fall on a group boundary.
    let (int_part, frac_part) = if digits.len() > scale {
        (
            digits[..digits.len() - scale].to_string(),
            digits[digits.len() - scale..].to_string(),
        )
    } else {
        (
            String::new(),
            format!("{}{}", "0".repeat(scale - digits.len()), digits),
        )
    };
    let int_pad = (4 - int_part.len() % 4) % 4;
    let frac_pad = (4 - frac_part.len() % 4) % 4;
    let int_padded = format!("{}{}", "0".repeat(int_pad), int_part);
    let frac_padded = format!("{}{}", frac_part, "0".repeat(frac_pad));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |acc, d| acc * 10 + i16::from(d - b'0')))
            .collect()
    };
    let mut groups = group(&int_padded);
    let int_groups = groups.len() as i32;
    groups.extend(group(&frac_padded));
    let mut weight = int_groups - 1;
    let lead = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..lead);
    weight -= lead as i32;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let sign = if v < 0 && !groups.is_empty() {
        NEG
    } else {
        POS
    };
    out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
    out.extend_from_slice(&(weight as i16).to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for g in groups {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

/// A binary `numeric` as a scaled integer and its scale; `None` for NaN,
/// infinities, malformed input or values beyond 128 bits.
pub fn decode(buf: &[u8]) -> Option<(i128, u8)> {
    let word = |i: usize| buf.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let ndigits = word(0)? as i16;
    let weight = word(2)? as i16 as i32;
    let sign = word(4)?;
    let dscale = word(6)?;
    if ndigits < 0 || (sign != POS && sign != NEG) || dscale > 38 {
        return None;
    }
    let mut value: i128 = 0;
    for i in 0..ndigits as usize {
        let digit = i128::from(word(8 + 2 * i)?);
        if digit >= 10_000 {
            return None;
        }
        // Decimal exponent of this group's last digit relative to the scale.
        let exp = 4 * (weight - i as i32) + i32::from(dscale);
        let term = if exp >= 0 {
            digit.checked_mul(10i128.checked_pow(exp as u32)?)?
        } else {
            // Digits beyond the display scale: PostgreSQL never sends them.
            digit / 10i128.checked_pow((-exp) as u32)?
        };
        value = value.checked_add(term)?;
    }
    if buf.len() != 8 + 2 * ndigits as usize {
        return None;
    }
    Some((if sign == NEG { -value } else { value }, dscale as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: i128, s: u8) -> Vec<u8> {
        let mut out = Vec::new();
        encode(v, s, &mut out);
        out
    }

    fn words(b: &[u8]) -> Vec<i16> {
        b.chunks(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]))
            .collect()
    }

    #[test]
    fn matches_postgresql_layout() {
        // numeric_send('12345.678') = ndigits 3, weight 1, sign 0, dscale 3, [1, 2345, 6780]
        assert_eq!(words(&enc(12_345_678, 3)), vec![3, 1, 0, 3, 1, 2345, 6780]);
        // '-0.05' = 1 digit, weight -1, negative, dscale 2, [500]
        assert_eq!(words(&enc(-5, 2)), vec![1, -1, 0x4000, 2, 500]);
        // '0.00' = no digits, weight 0, dscale 2
        assert_eq!(words(&enc(0, 2)), vec![0, 0, 0, 2]);
        // '100000000' = [1, 0, 0] trimmed to [1] with weight 2
        assert_eq!(words(&enc(100_000_000, 0)), vec![1, 2, 0, 0, 1]);
    }

    #[test]
    fn round_trips() {
        for (v, s) in [
            (0i128, 0u8),
            (1, 0),
            (-1, 4),
            (12345, 2),
            (i64::MAX as i128, 6),
            (-987654321012345678, 9),
            (5, 8),
        ] {
            assert_eq!(decode(&enc(v, s)), Some((v, s)), "{v} scale {s}");
        }
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(decode(&[0, 1]), None);
        assert_eq!(decode(&words_to_bytes(&[0, 0, 0xC000u16 as i16, 0])), None); // NaN
        assert_eq!(decode(&words_to_bytes(&[1, 0, 0, 0, 10_000])), None);
        assert_eq!(decode(&words_to_bytes(&[2, 0, 0, 0, 1])), None); // too short
    }

    fn words_to_bytes(w: &[i16]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_be_bytes()).collect()
    }
}
