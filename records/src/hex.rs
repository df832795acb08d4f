//! Lower-case hex, the one encoder (and decoder) for digests and ids.

/// `bytes` as lower-case hex, two digits a byte.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// The bytes that lower-case hex `text` spells, or `None` when it is not that (odd length, a
/// digit outside `0-9a-f`).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_lower_case_digits_a_byte() {
        assert_eq!(super::encode(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(super::encode(&[]), "");
    }

    #[test]
    fn decoding_reverses_encoding_and_refuses_anything_else() {
        let bytes = [0x00, 0x0f, 0xa0, 0xff];
        assert_eq!(super::decode(&super::encode(&bytes)), Some(bytes.to_vec()));
        for bad in ["0", "0g", "0F", " 00", "00\n"] {
            assert_eq!(super::decode(bad), None, "{bad:?}");
        }
    }
}
