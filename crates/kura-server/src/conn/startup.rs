//! Connection startup: protocol negotiation, TLS policy, trust or
//! SCRAM-SHA-256 password authentication, the parameters reported to the client, and the process id
//! and secret key a client later cancels with.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::mechanism::{AuthMechanismFactory, AuthState};
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    DefaultServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, PgWireConnectionState, PidSecretKeyGenerator, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::Connection;
use crate::compat::is_client_parameter;
use crate::engine::{Engine, EngineSession};

/// The ParameterStatus values sent after authentication.
fn parameter_provider() -> DefaultServerParameterProvider {
    let mut p = DefaultServerParameterProvider::default();
    p.server_version = crate::SERVER_VERSION.to_string();
    p.time_zone = "UTC".to_string();
    p.date_style = "ISO, MDY".to_string();
    p
}

#[async_trait]
impl<E: Engine> StartupHandler for Connection<E> {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                // Logged-in sessions only: connections still logging in
                // have their own pool, and cancel requests (their own short
                // connections) are never refused.
                if self.shared.gate.sessions() >= self.shared.max_connections {
                    return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                        "FATAL".into(),
                        "53300".into(),
                        "sorry, too many clients already".into(),
                    ))));
                }
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                let (pid, key) = self.shared.pids.generate(client);
                client.set_pid_and_secret_key(pid, key.clone());
                self.shared
                    .cancels
                    .register(pid, key.to_bytes(), self.runner.canceller());
                let user = startup.parameters.get("user").cloned().unwrap_or_default();
                let identity = crate::engine::Identity {
                    superuser: self.shared.superusers.contains(&user),
                    user,
                    database: self.shared.database_name.clone(),
                    pid,
                    version: self.shared.engine.version(),
                };
                let _ = self
                    .runner
                    .run(move |s: &mut E::Session| {
                        s.set_identity(identity);
                        Ok(())
                    })
                    .await;
                {
                    let mut st = self.state();
                    st.pid = Some(pid);
                    // Drivers pass DateStyle, extra_float_digits ... as startup
                    // parameters instead of SET statements.
                    for (k, v) in &startup.parameters {
                        if is_client_parameter(k) {
                            let _ = st.params.set(k, Some(v.clone()));
                        }
                    }
                }
                if self.shared.tls_required && !client.is_secure() {
                    tracing::info!(peer = %client.socket_addr(), "refused a client without TLS");
                    return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                        "FATAL".into(),
                        "28000".into(),
                        "this server requires TLS: connect with sslmode=require".into(),
                    ))));
                }
                let Some(scram) = &self.shared.scram else {
                    return self.logged_in(client, None).await;
                };
                // Channel binding (SCRAM-SHA-256-PLUS) only means something on TLS.
                let factory = if client.is_secure() {
                    &scram.tls
                } else {
                    &scram.plain
                };
                let mut mechanism = factory.create();
                match mechanism.begin(client).await? {
                    AuthState::InProgress(first) => {
                        {
                            let mut st = self.state();
                            st.scram = Some(mechanism);
                            st.scram_initial = true;
                        }
                        client.set_state(PgWireConnectionState::AuthenticationInProgress);
                        client
                            .send(PgWireBackendMessage::Authentication(first))
                            .await?;
                        Ok(())
                    }
                    AuthState::Ok { final_message, .. } => {
                        self.logged_in(client, final_message).await
                    }
                    AuthState::Failed(e) => Err(self.auth_failed(client, e)),
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(msg) => {
                let (mechanism, initial) = {
                    let mut st = self.state();
                    (st.scram.take(), std::mem::take(&mut st.scram_initial))
                };
                let mut mechanism = mechanism.ok_or(PgWireError::NoAuthenticationInProgress)?;
                let msg = if initial {
                    super::sasl::initial_response(msg).map_err(|e| self.auth_failed(client, e))?
                } else {
                    msg
                };
                match mechanism.next(client, msg).await {
                    Ok(AuthState::InProgress(next)) => {
                        self.state().scram = Some(mechanism);
                        client
                            .send(PgWireBackendMessage::Authentication(next))
                            .await?;
                        Ok(())
                    }
                    Ok(AuthState::Ok { final_message, .. }) => {
                        self.logged_in(client, final_message).await
                    }
                    Ok(AuthState::Failed(e)) | Err(e) => Err(self.auth_failed(client, e)),
                }
            }
            _ => Ok(()),
        }
    }
}

impl<E: Engine> Connection<E> {
    /// Completes the startup: the last SASL message if any, AuthenticationOk,
    /// parameters, the cancel key and ReadyForQuery.
    async fn logged_in<C>(&self, client: &mut C, last: Option<Authentication>) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let Some(last) = last {
            client
                .send(PgWireBackendMessage::Authentication(last))
                .await?;
        }
        // Counted before ReadyForQuery goes out: a client that has it may
        // connect again at once, and must find this session counted against
        // --max-connections. If the client is gone, closing uncounts it.
        self.admission.logged_in();
        finish_authentication(client, &parameter_provider()).await?;
        Ok(())
    }

    /// Logs a failed login in one line (never a secret) and returns the error
    /// the client gets: 28P01 for a wrong password or unknown user.
    fn auth_failed<C: ClientInfo>(&self, client: &C, e: PgWireError) -> PgWireError {
        let user = client
            .metadata()
            .get(METADATA_USER)
            .cloned()
            .unwrap_or_default();
        match e {
            // The SCRAM exchange names no user (clients leave it to the
            // startup packet); say which one, in PostgreSQL's words.
            PgWireError::InvalidPassword(_) => {
                tracing::warn!(peer = %client.socket_addr(), user, "password authentication failed");
                PgWireError::UserError(Box::new(ErrorInfo::new(
                    "FATAL".into(),
                    "28P01".into(),
                    format!("password authentication failed for user \"{user}\""),
                )))
            }
            other => {
                let e = super::sasl::exchange_error(other);
                tracing::warn!(peer = %client.socket_addr(), user, "authentication failed: {e}");
                e
            }
        }
    }
}
