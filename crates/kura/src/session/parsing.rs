//! A session's parse: its tree's memory reserved, a long text parsed where a cancel stops it.

use super::*;

impl Session {
    /// Parses `sql` with what its syntax tree may take reserved from the budget
    /// all running queries share (see `limits`); the reservation is kept as long
    /// as the statements.
    pub(super) fn parse_counted(
        &self,
        sql: &str,
    ) -> (
        KuraResult<Vec<Statement>>,
        Option<crate::limits::ParseMemory>,
    ) {
        let memory = match crate::limits::reserve_parse(sql, &self.shared_memory) {
            Ok(memory) => memory,
            Err(e) => return (Err(e), None),
        };
        if !crate::limits::parses_long(sql) {
            return (parse(sql), memory);
        }
        // A long text parses for seconds: its time limit and a cancel request
        // count from here, not only once it runs — and its first statement's
        // limit counts from here too (one limit for the text, not two).
        self.cancel.start_parse(self.settings.statement_timeout());
        let cancel = self.cancel.clone();
        let parsed = crate::parsing::parse_interruptibly(sql, memory, || cancel.is_canceled());
        match parsed {
            Ok(Some((statements, memory))) => (Ok(statements), memory),
            Ok(None) => {
                let r = self.cancel.check().map(|()| Vec::new());
                self.cancel.start(None);
                (r, None)
            }
            Err(e) => {
                self.cancel.start(None);
                (Err(e), None)
            }
        }
    }
}
