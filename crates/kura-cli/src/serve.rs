//! `kura serve`: the PostgreSQL wire protocol (loopback unless told otherwise;
//! SCRAM-SHA-256 passwords and TLS when configured), so psql, JDBC and psycopg
//! connect to the database unchanged.

use std::path::Path;
use std::sync::Arc;

use kura::{Database, FileAccess};

use crate::error::{CliError, CliResult};
use kura_server::{
    parse_listen, serve_until_signal, Auth, Credentials, KuraEngine, ServerConfig, Tls,
};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Address to listen on (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: String,
    /// Users and passwords, one `user:password` or `user:SCRAM-SHA-256$...`
    /// (a PostgreSQL verifier) a line; clients log in with SCRAM-SHA-256.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["password", "user"])]
    pub password_file: Option<std::path::PathBuf>,
    /// Require this password (SCRAM-SHA-256). Prefer the environment variable:
    /// a command line is visible to every local user.
    #[arg(long, env = "KURA_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Only this user name may log in with the password (any name otherwise).
    #[arg(long, requires = "password")]
    pub user: Option<String>,
    /// Serve an address other than loopback without passwords (anyone who can
    /// reach it has full access).
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// PEM certificate chain for TLS (clients asking for SSL get it).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Refuse clients that do not use TLS.
    #[arg(long, requires = "tls_cert")]
    pub tls_required: bool,
    /// Seconds a client has to complete TLS and log in before it is disconnected.
    #[arg(long, value_name = "SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=60))]
    pub auth_timeout: u64,
    /// Let clients' `COPY t FROM 'file'` read files below this directory (relative
    /// names are resolved in it); without it the server reads no files for clients.
    #[arg(long, value_name = "DIR")]
    pub copy_dir: Option<std::path::PathBuf>,
    /// Logged-in sessions served at once; more are refused ("too many clients already").
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections logging in at once (TLS, startup, password); past it the one
    /// logging in longest is closed, so idle connections cannot lock clients out.
    #[arg(long, default_value_t = kura_server::gate::DEFAULT_MAX_PENDING as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_pending_connections: u32,
    /// A user who may change database-wide settings (tier2, resident_indexes,
    /// buffer_policy, llc_protect); repeat for several.
    #[arg(long, value_name = "USER", default_value = kura_server::server::DEFAULT_SUPERUSER)]
    pub superuser: Vec<String>,
    #[command(flatten)]
    pub db: crate::DbArgs,
}

/// Serves `database` (opened from `db`) until SIGINT/SIGTERM.
pub fn run(args: &Args, db: &Path, database: Database) -> CliResult<()> {
    let listen = parse_listen(&args.listen).map_err(server)?;
    let credentials = match (&args.password_file, &args.password) {
        (Some(f), _) => Some(Credentials::from_password_file(f).map_err(CliError::Server)?),
        (None, Some(p)) if p.is_empty() => {
            return Err(CliError::Usage("the password is empty".into()))
        }
        (None, Some(p)) => Some(Credentials::single(args.user.as_deref(), p)),
        (None, None) => None,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(Tls::from_pem_files(cert, key).map_err(server)?),
        _ => None,
    };
    if tls.is_none() && credentials.is_some() && !listen.ip().is_loopback() {
        eprintln!(
            "warning: serving {listen} without TLS: passwords are not sent, but queries and results travel in clear"
        );
    }
    let file_access = match &args.copy_dir {
        Some(dir) => FileAccess::under(dir)
            .map_err(CliError::io_in(format!("--copy-dir {}", dir.display())))?,
        None => FileAccess::Denied,
    };
    quiet_panics();
    let mut config = ServerConfig::new(listen);
    config.max_connections = args.max_connections as usize;
    config.max_pending_connections = args.max_pending_connections as usize;
    config.superusers = args.superuser.clone();
    if let Some(credentials) = credentials {
        config.auth = Auth::Scram(Arc::new(credentials));
    } else if !listen.ip().is_loopback() && args.insecure_no_auth {
        eprintln!(
            "warning: serving {listen} without a password: anyone who can reach it has full access"
        );
    }
    config.allow_remote_without_password = args.insecure_no_auth;
    config.tls_required = args.tls_required;
    config.tls = tls;
    config.auth_timeout = std::time::Duration::from_secs(args.auth_timeout);
    config.database_name = db
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kura".into());
    let engine = Arc::new(KuraEngine::new(database).with_file_access(file_access));
    let summary = serve_until_signal(engine.clone(), config, |addr| {
        eprintln!(
            "kura serve: listening on {addr} (database {})",
            db.display()
        );
    })
    .map_err(server)?;
    eprintln!(
        "kura serve: shut down after {} connections{}",
        summary.connections,
        if summary.sessions_left > 0 {
            format!(" ({} sessions still finishing)", summary.sessions_left)
        } else {
            String::new()
        }
    );
    // The last reference: dropping it closes the database file.
    drop(engine);
    Ok(())
}

/// A server error, as the server words it.
fn server(e: impl std::fmt::Display) -> CliError {
    CliError::Server(e.to_string())
}

/// A panic is caught where it happens (a statement fails with an internal error,
/// a connection whose messages cannot be decoded is closed); the server logs
/// it as one line, not a backtrace per malformed message from a hostile client.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        // Dependencies' sources live in the cargo registry; their crate-relative
        // path is enough to find the line.
        let at = info
            .location()
            .map(|l| {
                let file = l.file();
                let short = file
                    .find("/registry/src/")
                    .and_then(|i| file[i + 14..].find('/').map(|j| &file[i + 15 + j..]))
                    .unwrap_or(file);
                format!(" at {short}:{}", l.line())
            })
            .unwrap_or_default();
        tracing::error!("internal error{at}: {what}");
    }));
}
