//! Frontend frames checked before pgwire decodes them: the type, the declared length and the body's layout.

// pgwire's decoders trust what they are given: a length under 4 underflows,
// a body shorter than its fields panics, one longer than them is read on into
// the next message. So the loop hands pgwire exactly one frame, and only one
// that passed these checks; what fails them ends the connection with FATAL,
// in PostgreSQL's words.

use pgwire::api::PgWireConnectionState;

/// The largest startup packet: PostgreSQL's MAX_STARTUP_PACKET_LENGTH, and pgwire's.
const MAX_STARTUP: usize = 10_000;
/// The largest message of most types: PostgreSQL's PQ_SMALL_MESSAGE_LIMIT, and pgwire's.
const MAX_SMALL: usize = 10_000;
/// The largest Query, Parse, Bind or CopyData: pgwire's limit (PostgreSQL's
/// PQ_LARGE_MESSAGE_LIMIT is one more).
const MAX_LARGE: usize = 0x3fff_fffe;

/// The startup packet's code for a CancelRequest (1234.5678).
const CANCEL_CODE: u32 = 80_877_102;

/// What the client may send now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A startup packet or CancelRequest: no type byte.
    Startup,
    /// A password message (the SCRAM exchange).
    Authentication,
    /// The messages of a logged-in session.
    Session,
}

impl Phase {
    pub(crate) fn of(state: PgWireConnectionState) -> Phase {
        match state {
            PgWireConnectionState::AwaitingSslRequest | PgWireConnectionState::AwaitingStartup => {
                Phase::Startup
            }
            PgWireConnectionState::AuthenticationInProgress => Phase::Authentication,
            _ => Phase::Session,
        }
    }
}

/// Why the connection ends: sent as a FATAL ErrorResponse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl Violation {
    /// SQLSTATE 08P01, protocol_violation.
    pub(crate) fn protocol(message: impl Into<String>) -> Violation {
        Violation {
            code: "08P01",
            message: message.into(),
        }
    }

    /// A body that does not match its type's layout.
    pub(crate) fn format(phase: Phase) -> Violation {
        Violation::protocol(if phase == Phase::Startup {
            "invalid startup packet layout: expected terminator as last byte"
        } else {
            "invalid message format"
        })
    }
}

/// The length of the frame at the front of `buf` once all of it has arrived
/// (`None` until then). Fails as soon as what has arrived cannot be the start
/// of a valid frame, so a huge declared length is refused before any of it is
/// read.
pub(crate) fn next_frame(buf: &[u8], phase: Phase) -> Result<Option<usize>, Violation> {
    if phase == Phase::Startup {
        return startup_frame(buf);
    }
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    check_type(kind, phase)?;
    let Some(len) = be_i32(buf, 1) else {
        return Ok(None);
    };
    let max = match kind {
        b'Q' | b'P' | b'B' | b'd' => MAX_LARGE,
        _ => MAX_SMALL,
    };
    let len = usize::try_from(len)
        .ok()
        .filter(|n| (4..=max).contains(n))
        .ok_or_else(|| Violation::protocol("invalid message length"))?;
    let total = 1 + len;
    if buf.len() < total {
        return Ok(None);
    }
    check_body(kind, &buf[5..total])?;
    Ok(Some(total))
}

fn startup_frame(buf: &[u8]) -> Result<Option<usize>, Violation> {
    let Some(len) = be_i32(buf, 0) else {
        return Ok(None);
    };
    let len = usize::try_from(len)
        .ok()
        .filter(|n| (8..=MAX_STARTUP).contains(n))
        .ok_or_else(|| Violation::protocol("invalid length of startup packet"))?;
    if buf.len() < len {
        return Ok(None);
    }
    let code = u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes"));
    if code == CANCEL_CODE {
        // pgwire checks the key's length; PostgreSQL never answers a
        // CancelRequest, so nothing more is said about it here.
        return Ok(Some(len));
    }
    let (major, minor) = (code >> 16, code & 0xffff);
    if major != 3 {
        return Err(Violation {
            code: "0A000",
            message: format!(
                "unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.2"
            ),
        });
    }
    // Parameters end with an empty name: the packet's last byte is NUL.
    if len == 8 || buf[len - 1] != 0 {
        return Err(Violation::format(Phase::Startup));
    }
    Ok(Some(len))
}

/// The types the client may send in `phase`, checked on the type byte alone
/// as PostgreSQL does.
fn check_type(kind: u8, phase: Phase) -> Result<(), Violation> {
    match phase {
        Phase::Authentication if kind == b'p' || kind == b'X' => Ok(()),
        Phase::Authentication => Err(Violation::protocol(format!(
            "expected password response, got message type {kind}"
        ))),
        _ if b"QPBEDCHSXdcf".contains(&kind) => Ok(()),
        _ => Err(Violation::protocol(format!(
            "invalid frontend message type {kind}"
        ))),
    }
}

/// The body holds exactly the fields pgwire's decoder for `kind` reads.
fn check_body(kind: u8, body: &[u8]) -> Result<(), Violation> {
    let mut r = Fields(body);
    let whole = match kind {
        b'Q' | b'f' => r.cstring(),
        b'P' => r.cstring() && r.cstring() && r.counted(4),
        b'B' => r.cstring() && r.cstring() && r.counted(2) && r.values() && r.counted(2),
        b'E' => r.cstring() && r.take(4).is_some(),
        b'D' | b'C' => {
            let target = r.take(1).map(|t| t[0]);
            if let Some(t) = target.filter(|t| *t != b'S' && *t != b'P') {
                let what = if kind == b'D' { "DESCRIBE" } else { "CLOSE" };
                return Err(Violation::protocol(format!(
                    "invalid {what} message subtype {t}"
                )));
            }
            target.is_some() && r.cstring()
        }
        b'S' | b'H' | b'X' | b'c' => true,
        // CopyData and password messages are data to their handlers.
        _ => return Ok(()),
    };
    if whole && r.0.is_empty() {
        Ok(())
    } else {
        Err(Violation::format(Phase::Session))
    }
}

fn be_i32(buf: &[u8], at: usize) -> Option<i32> {
    let bytes = buf.get(at..at + 4)?;
    Some(i32::from_be_bytes(bytes.try_into().expect("4 bytes")))
}

/// The unread rest of a body.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn cstring(&mut self) -> bool {
        match self.0.iter().position(|&b| b == 0) {
            Some(nul) => self.take(nul + 1).is_some(),
            None => false,
        }
    }

    fn count(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    /// A count and that many fields of `size` bytes.
    fn counted(&mut self, size: usize) -> bool {
        self.count().and_then(|n| self.take(n * size)).is_some()
    }

    /// Bind's parameter values: a count, then each value's length (-1 for
    /// NULL) and bytes.
    fn values(&mut self) -> bool {
        let Some(n) = self.count() else {
            return false;
        };
        (0..n).all(|_| match self.take(4) {
            Some(b) => match i32::from_be_bytes(b.try_into().expect("4 bytes")) {
                -1 => true,
                len => usize::try_from(len).is_ok_and(|len| self.take(len).is_some()),
            },
            None => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn message(v: Result<Option<usize>, Violation>) -> String {
        v.unwrap_err().message
    }

    #[test]
    fn a_frame_is_complete_only_with_all_its_bytes() {
        let q = frame(b'Q', b"select 1\0");
        for cut in 0..q.len() {
            assert_eq!(next_frame(&q[..cut], Phase::Session), Ok(None), "{cut}");
        }
        let mut two = q.clone();
        two.extend_from_slice(&frame(b'S', b""));
        assert_eq!(next_frame(&two, Phase::Session), Ok(Some(q.len())));
    }

    #[test]
    fn types_are_checked_on_the_first_byte() {
        assert_eq!(
            message(next_frame(b"Z", Phase::Session)),
            "invalid frontend message type 90"
        );
        assert_eq!(
            message(next_frame(b"p", Phase::Session)),
            "invalid frontend message type 112"
        );
        assert_eq!(
            message(next_frame(b"Q", Phase::Authentication)),
            "expected password response, got message type 81"
        );
        assert_eq!(next_frame(b"p", Phase::Authentication), Ok(None));
    }

    #[test]
    fn lengths_out_of_range_are_refused_from_the_header() {
        for (kind, len) in [
            (b'Q', 3),
            (b'Q', -1),
            (b'Q', i32::MIN),
            (b'S', 10_001),
            (b'Q', 0x4000_0000),
        ] {
            let mut m = vec![kind];
            m.extend_from_slice(&len.to_be_bytes());
            assert_eq!(
                message(next_frame(&m, Phase::Session)),
                "invalid message length"
            );
        }
        let mut big = vec![b'Q'];
        big.extend_from_slice(&0x3fff_fffei32.to_be_bytes());
        assert_eq!(next_frame(&big, Phase::Session), Ok(None));
    }

    #[test]
    fn bodies_must_hold_exactly_their_fields() {
        let ok: &[(u8, &[u8])] = &[
            (b'Q', b"select 1\0"),
            (b'P', b"s\0select $1\0\0\x01\0\0\0\x17"),
            (
                b'B',
                b"\0s\0\0\x01\0\x01\0\x02\0\0\0\x0212\xff\xff\xff\xff\0\0",
            ),
            (b'E', b"\0\0\0\0\0"),
            (b'D', b"Ss\0"),
            (b'C', b"P\0"),
            (b'S', b""),
            (b'd', b"anything\0at all"),
            (b'f', b"why\0"),
        ];
        for (kind, body) in ok {
            let m = frame(*kind, body);
            assert_eq!(
                next_frame(&m, Phase::Session),
                Ok(Some(m.len())),
                "{body:?}"
            );
        }
        let bad: &[(u8, &[u8])] = &[
            (b'Q', b"select 1"),
            (b'Q', b"select 1\0\0"),
            (b'P', b"\0select $1\0\x7f\xff\0\0\0\x17"),
            (b'B', b"\0\0\0\0\0\x01\x7f\xff\xff\xff\0\0"),
            (b'B', b"\0\0\0\0\0\x01\xff\xff\xff\xfe\0\0"),
            (b'B', b"\0\0\0\0\0\0"),
            (b'E', b"nope\0\0\0"),
            (b'D', b""),
            (b'S', b"x"),
            (b'H', b"\0"),
        ];
        for (kind, body) in bad {
            assert_eq!(
                message(next_frame(&frame(*kind, body), Phase::Session)),
                "invalid message format",
                "{body:?}"
            );
        }
        assert_eq!(
            message(next_frame(&frame(b'D', b"X\0"), Phase::Session)),
            "invalid DESCRIBE message subtype 88"
        );
    }

    #[test]
    fn startup_packets() {
        let packet = |len: i32, rest: &[u8]| {
            let mut m = len.to_be_bytes().to_vec();
            m.extend_from_slice(rest);
            m
        };
        let good = packet(19, b"\0\x03\0\0user\0kura\0\0");
        assert_eq!(next_frame(&good, Phase::Startup), Ok(Some(19)));
        assert_eq!(next_frame(&good[..18], Phase::Startup), Ok(None));
        let cancel = packet(16, b"\x04\xd2\x16\x2e\0\0\0\x01\0\0\0\x02");
        assert_eq!(next_frame(&cancel, Phase::Startup), Ok(Some(16)));
        for len in [0, 4, 7, -1, 10_001, 1 << 30] {
            assert_eq!(
                message(next_frame(&packet(len, b""), Phase::Startup)),
                "invalid length of startup packet"
            );
        }
        assert_eq!(
            message(next_frame(&packet(8, b"\0\x03\0\0"), Phase::Startup)),
            "invalid startup packet layout: expected terminator as last byte"
        );
        assert_eq!(
            message(next_frame(&packet(12, b"\0\x03\0\0user"), Phase::Startup)),
            "invalid startup packet layout: expected terminator as last byte"
        );
        let v = next_frame(&packet(9, b"\x04\xd2\x16\x2f\0"), Phase::Startup).unwrap_err();
        assert_eq!(v.code, "0A000");
        assert!(v
            .message
            .starts_with("unsupported frontend protocol 1234.5679"));
    }
}
