//! Relations a program registers in its session (see `crate::registered`).

use arrow_array::RecordBatch;
use arrow_schema::Schema;

use super::*;

impl Session {
    /// Makes Arrow data queryable as `name` in this session (until [`Session::unregister`]
    /// or the session's end), replacing an earlier registration of that name. The data is
    /// converted to kura's vectors once, here: later changes to the caller's copy are not seen.
    pub fn register_arrow(
        &mut self,
        name: &str,
        schema: &Schema,
        batches: &[RecordBatch],
    ) -> KuraResult<()> {
        self.registered.register_arrow(name, schema, batches)
    }

    /// Forgets a registered relation; false when none has that name.
    pub fn unregister(&mut self, name: &str) -> bool {
        self.registered.unregister(name)
    }

    /// The names of this session's registered relations, sorted.
    pub fn registered_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.registered.names().cloned().collect();
        names.sort();
        names
    }
}
