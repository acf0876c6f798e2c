//! Password authentication: SCRAM-SHA-256 verifiers (salted, as PostgreSQL
//! stores them), the password file that supplies them, and the source the
//! SCRAM exchange asks for a user's verifier. Only verifiers are kept in
//! memory; a cleartext password is hashed as soon as it is read.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramSecret};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};
use ring::hmac;

/// PBKDF2 rounds for verifiers made here: PostgreSQL's default
/// (`scram_iterations`).
pub const SCRAM_ITERATIONS: usize = 4096;

const VERIFIER_PREFIX: &str = "SCRAM-SHA-256$";

/// A SCRAM-SHA-256 verifier: enough to check a client's proof and sign the
/// server's answer, not enough to log in with (that needs the password or the
/// salted password, neither of which is kept).
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    salt: Vec<u8>,
    iterations: usize,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// Hashes `password` with a fresh random salt.
    pub fn from_password(password: &str) -> Verifier {
        let salt: [u8; 16] = rand::random();
        Self::from_password_and_salt(password, &salt, SCRAM_ITERATIONS)
    }

    fn from_password_and_salt(password: &str, salt: &[u8], iterations: usize) -> Verifier {
        let salted = gen_salted_password(password, salt, iterations);
        match ScramSecret::verifier_from_salted_password(salt.to_vec(), salted, iterations) {
            ScramSecret::Verifier {
                salt,
                iterations,
                stored_key,
                server_key,
            } => Verifier {
                salt,
                iterations,
                stored_key,
                server_key,
            },
            ScramSecret::SaltedPassword { .. } => unreachable!("asked for a verifier"),
        }
    }

    /// Parses PostgreSQL's form (`pg_authid.rolpassword`):
    /// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64.
    /// The error never quotes the text (it may be a secret).
    pub fn parse(text: &str) -> Result<Verifier, String> {
        let bad = |what: &str| format!("not a SCRAM-SHA-256 verifier ({what})");
        let rest = text
            .strip_prefix(VERIFIER_PREFIX)
            .ok_or_else(|| bad("expected SCRAM-SHA-256$..."))?;
        let (params, keys) = rest
            .split_once('$')
            .ok_or_else(|| bad("expected <iterations>:<salt>$<StoredKey>:<ServerKey>"))?;
        let (iterations, salt) = params
            .split_once(':')
            .ok_or_else(|| bad("expected <iterations>:<salt>"))?;
        let (stored, server) = keys
            .split_once(':')
            .ok_or_else(|| bad("expected <StoredKey>:<ServerKey>"))?;
        let iterations: usize = iterations
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| bad("iteration count"))?;
        let decode = |s: &str, what: &str| STANDARD.decode(s).map_err(|_| bad(what));
        let salt = decode(salt, "salt is not base64")?;
        let stored_key = decode(stored, "StoredKey is not base64")?;
        let server_key = decode(server, "ServerKey is not base64")?;
        if salt.is_empty() || stored_key.len() != 32 || server_key.len() != 32 {
            return Err(bad("a key is not 32 bytes or the salt is empty"));
        }
        Ok(Verifier {
            salt,
            iterations,
            stored_key,
            server_key,
        })
    }

    /// PostgreSQL's text form, which [`Verifier::parse`] reads back.
    pub fn to_postgres(&self) -> String {
        format!(
            "{VERIFIER_PREFIX}{}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key)
        )
    }

    fn secret(&self) -> ScramSecret {
        ScramSecret::Verifier {
            salt: self.salt.clone(),
            iterations: self.iterations,
            stored_key: self.stored_key.clone(),
            server_key: self.server_key.clone(),
        }
    }
}

/// Who may log in: a verifier per user name, and optionally one for any name.
#[derive(Clone)]
pub struct Credentials {
    users: HashMap<String, Verifier>,
    any_user: Option<Verifier>,
    /// Key for the made-up salts of unknown users (see [`Credentials::secret_for`]).
    mock_key: [u8; 32],
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("users", &self.users.len())
            .field("any_user", &self.any_user.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for Credentials {
    fn default() -> Self {
        Credentials {
            users: HashMap::new(),
            any_user: None,
            mock_key: rand::random(),
        }
    }
}

impl Credentials {
    /// One password, for `user` only or (None) for any user name.
    pub fn single(user: Option<&str>, password: &str) -> Credentials {
        let mut c = Credentials::default();
        let v = Verifier::from_password(password);
        match user {
            Some(u) => c.add_user(u, v),
            None => c.any_user = Some(v),
        }
        c
    }

    pub fn add_user(&mut self, user: &str, verifier: Verifier) {
        self.users.insert(user.to_string(), verifier);
    }

    /// The number of named users.
    pub fn len(&self) -> usize {
        self.users.len() + usize::from(self.any_user.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads a password file: one `user:password` or
    /// `user:SCRAM-SHA-256$...` per line; blank lines and lines starting with
    /// `#` are skipped. Errors name the line, never its text.
    pub fn parse_password_file(text: &str) -> Result<Credentials, String> {
        let mut c = Credentials::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let n = i + 1;
            let (user, secret) = line
                .split_once(':')
                .ok_or_else(|| format!("line {n}: expected user:password"))?;
            let user = user.trim();
            if user.is_empty() {
                return Err(format!("line {n}: no user name before ':'"));
            }
            if secret.is_empty() {
                return Err(format!("line {n}: empty password for {user}"));
            }
            let verifier = if secret.starts_with(VERIFIER_PREFIX) {
                Verifier::parse(secret).map_err(|e| format!("line {n}: {e}"))?
            } else {
                Verifier::from_password(secret)
            };
            if c.users.insert(user.to_string(), verifier).is_some() {
                return Err(format!("line {n}: {user} appears twice"));
            }
        }
        if c.is_empty() {
            return Err("no user:password line".into());
        }
        Ok(c)
    }

    pub fn from_password_file(path: &Path) -> Result<Credentials, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse_password_file(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The verifier for `user`. An unknown user gets a made-up one, with a
    /// salt that is the same on every attempt, so the exchange runs to its end
    /// and fails like a wrong password: the answer does not tell which user
    /// names exist (as PostgreSQL's mock authentication).
    fn secret_for(&self, user: &str) -> ScramSecret {
        if let Some(v) = self.users.get(user).or(self.any_user.as_ref()) {
            return v.secret();
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.mock_key);
        let salt = hmac::sign(&key, user.as_bytes()).as_ref()[..16].to_vec();
        ScramSecret::Verifier {
            salt,
            iterations: SCRAM_ITERATIONS,
            stored_key: rand::random::<[u8; 32]>().to_vec(),
            server_key: rand::random::<[u8; 32]>().to_vec(),
        }
    }
}

#[async_trait]
impl AuthSource for Credentials {
    async fn get_password(&self, _login: &LoginInfo) -> PgWireResult<Password> {
        // Only the SCRAM exchange is offered, and it asks for verifiers.
        Err(PgWireError::ApiError(
            "only SCRAM-SHA-256 authentication is offered".into(),
        ))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().ok_or(PgWireError::UserNameRequired)?;
        Ok((self.secret_for(user), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifier_round_trips_through_postgres_text() {
        let v = Verifier::from_password("pencil");
        let text = v.to_postgres();
        assert!(text.starts_with("SCRAM-SHA-256$4096:"), "{text}");
        assert_eq!(Verifier::parse(&text).unwrap(), v);
    }

    #[test]
    fn verifier_matches_postgresql() {
        // RFC 5802's formulas computed independently (Python's hashlib and hmac)
        // for password "pencil" and this salt.
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let v = Verifier::from_password_and_salt("pencil", &salt, 4096);
        assert_eq!(
            v.to_postgres(),
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="
        );
    }

    #[test]
    fn bad_verifiers_and_files_are_refused_without_quoting_secrets() {
        for bad in [
            "SCRAM-SHA-256$x:abc$a:b",
            "SCRAM-SHA-256$4096:!!$a:b",
            "SCRAM-SHA-256$4096:c2FsdA==",
            "md5abcdef",
        ] {
            let e = Verifier::parse(bad).unwrap_err();
            assert!(!e.contains(bad), "{e}");
        }
        let e = Credentials::parse_password_file("alice:ok\nhunter2\n").unwrap_err();
        assert_eq!(e, "line 2: expected user:password");
        assert!(Credentials::parse_password_file("# nobody\n\n").is_err());
        assert!(Credentials::parse_password_file("a:x\na:y\n").is_err());
    }

    #[test]
    fn password_file_takes_passwords_and_verifiers() {
        let v = Verifier::from_password("pw2").to_postgres();
        let c = Credentials::parse_password_file(&format!(
            "# users\nalice:pw:with:colons\r\nbob:{v}\n\n"
        ))
        .unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.users["bob"].to_postgres(), v);
        let alice = &c.users["alice"];
        let again = Verifier::from_password_and_salt("pw:with:colons", &alice.salt, 4096);
        assert_eq!(*alice, again);
    }

    #[test]
    fn unknown_users_get_a_stable_salt() {
        let c = Credentials::single(Some("alice"), "pw");
        let salt = |u: &str| match c.secret_for(u) {
            ScramSecret::Verifier { salt, .. } => salt,
            ScramSecret::SaltedPassword { salt, .. } => salt,
        };
        assert_eq!(salt("mallory"), salt("mallory"));
        assert_ne!(salt("mallory"), salt("eve"));
        assert_ne!(salt("mallory"), c.users["alice"].salt);
    }
}
