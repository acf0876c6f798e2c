//! `kura serve`: the PostgreSQL wire protocol on a loopback address, so psql,
//! JDBC and psycopg connect to the database unchanged.

use std::path::Path;
use std::sync::Arc;

use kura::{Database, FileAccess};
use kura_server::{parse_listen, serve_until_signal, Auth, KuraEngine, ServerConfig};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Address to listen on (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: String,
    /// Require this password (md5 authentication); without it, loopback clients are trusted.
    #[arg(long, conflicts_with = "password_file")]
    pub password: Option<String>,
    /// Read the required password from the first line of this file.
    #[arg(long)]
    pub password_file: Option<std::path::PathBuf>,
    /// Only this user name may log in (with a password).
    #[arg(long)]
    pub user: Option<String>,
    /// Let clients' `COPY t FROM 'file'` read files below this directory (relative
    /// names are resolved in it); without it the server reads no files for clients.
    #[arg(long, value_name = "DIR")]
    pub copy_dir: Option<std::path::PathBuf>,
    /// Connections served at once; more are refused ("too many clients already").
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    #[command(flatten)]
    pub db: crate::DbArgs,
}

/// Serves `database` (opened from `db`) until SIGINT/SIGTERM.
pub fn run(args: &Args, db: &Path, database: Database) -> Result<(), String> {
    let listen = parse_listen(&args.listen).map_err(|e| e.to_string())?;
    let password = match (&args.password, &args.password_file) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| format!("cannot read {}: {e}", f.display()))?;
            let line = text.lines().next().unwrap_or("").trim_end().to_string();
            if line.is_empty() {
                return Err(format!("{} holds no password", f.display()));
            }
            Some(line)
        }
        (None, None) => None,
    };
    if password.is_none() && args.user.is_some() {
        return Err("--user needs --password or --password-file".into());
    }
    if password.is_none() && !listen.ip().is_loopback() {
        eprintln!(
            "warning: serving {listen} without a password: anyone who can reach it has full access"
        );
    }
    let file_access = match &args.copy_dir {
        Some(dir) => {
            FileAccess::under(dir).map_err(|e| format!("--copy-dir {}: {e}", dir.display()))?
        }
        None => FileAccess::Denied,
    };
    quiet_panics();
    let mut config = ServerConfig::new(listen);
    config.max_connections = args.max_connections as usize;
    if let Some(password) = password {
        config.auth = Auth::Md5 {
            user: args.user.clone(),
            password,
        };
    }
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
    .map_err(|e| e.to_string())?;
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
