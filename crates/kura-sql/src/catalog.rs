//! What the planner needs to know about the database: tables (as scan sources with
//! statistics) and views (their SQL), looked up by case-insensitive name.

use std::sync::Arc;

use kura_exec::TableSource;

/// A stored view: its defining query and optional column names.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewDefinition {
    pub sql: String,
    pub columns: Vec<String>,
}

/// Name lookup for the binder.
pub trait CatalogProvider {
    fn table(&self, name: &str) -> Option<Arc<dyn TableSource>>;
    fn view(&self, name: &str) -> Option<ViewDefinition>;
    /// Every table and view name (for "did you mean" hints).
    fn relation_names(&self) -> Vec<String>;
    /// The settings `pg_catalog.pg_settings` lists.
    fn settings(&self) -> Vec<crate::system::SysSetting> {
        Vec::new()
    }
    /// The session a statement runs in (`version()`, `now()` ...); `None` where
    /// there is none (tools, tests): those functions then fail.
    fn session(&self) -> Option<&crate::SessionInfo> {
        None
    }
}

/// An in-memory catalog (tests, tools).
#[derive(Default, Clone)]
pub struct MemoryCatalog {
    pub tables: Vec<Arc<dyn TableSource>>,
    pub views: Vec<(String, ViewDefinition)>,
}

impl MemoryCatalog {
    pub fn add_table(&mut self, t: Arc<dyn TableSource>) {
        self.tables
            .retain(|x| !x.name().eq_ignore_ascii_case(t.name()));
        self.tables.push(t);
    }
}

impl CatalogProvider for MemoryCatalog {
    fn table(&self, name: &str) -> Option<Arc<dyn TableSource>> {
        self.tables
            .iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
            .cloned()
    }
    fn view(&self, name: &str) -> Option<ViewDefinition> {
        self.views
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
    fn relation_names(&self) -> Vec<String> {
        self.tables
            .iter()
            .map(|t| t.name().to_string())
            .chain(self.views.iter().map(|(n, _)| n.clone()))
            .collect()
    }
}
