//! Connection startup: protocol negotiation, trust or md5 password
//! authentication, the parameters reported to the client, and the process id
//! and secret key a client later cancels with.

use std::fmt::Debug;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::md5pass::hash_md5_password;
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
use crate::engine::Engine;
use crate::server::Auth;

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
                // Counted at startup, so cancel requests (their own short
                // connections) are never refused.
                let open = self.shared.open_connections.load(Ordering::SeqCst);
                if open > self.shared.max_connections {
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
                match &self.shared.auth {
                    Auth::Trust => finish_authentication(client, &parameter_provider()).await,
                    Auth::Md5 { .. } => {
                        let salt: [u8; 4] = rand::random();
                        self.state().salt = Some(salt);
                        client.set_state(PgWireConnectionState::AuthenticationInProgress);
                        client
                            .send(PgWireBackendMessage::Authentication(
                                Authentication::MD5Password(salt.to_vec()),
                            ))
                            .await?;
                        Ok(())
                    }
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(msg) => {
                let Auth::Md5 {
                    user: allowed_user,
                    password,
                } = &self.shared.auth
                else {
                    return Err(PgWireError::NoAuthenticationInProgress);
                };
                let salt = self
                    .state()
                    .salt
                    .take()
                    .ok_or(PgWireError::NoAuthenticationInProgress)?;
                let presented = msg.into_password()?.password;
                let user = client
                    .metadata()
                    .get(METADATA_USER)
                    .cloned()
                    .unwrap_or_default();
                let user_ok = allowed_user.as_ref().is_none_or(|u| *u == user);
                let expected = hash_md5_password(&user, password, &salt);
                if user_ok && constant_time_eq(presented.as_bytes(), expected.as_bytes()) {
                    finish_authentication(client, &parameter_provider()).await
                } else {
                    Err(PgWireError::InvalidPassword(user))
                }
            }
            _ => Ok(()),
        }
    }
}

/// Compares without an early exit, so timing does not reveal how much matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
