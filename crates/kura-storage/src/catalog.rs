//! The catalog: tables (schema + where their data's metadata lives), views, and
//! the free-page list, persisted as one blob whose first page the header names.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use kura_common::DataType;

use crate::file::PageId;
use crate::index::BTreeIndex;
use crate::rules::TableRules;
pub use crate::schema::{ColumnDef, Schema};
use crate::sequence::SequenceEntry;
use crate::table::Table;

/// A stored view: its defining SQL and output column names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewDef {
    pub name: String,
    pub sql: String,
    pub columns: Vec<String>,
}

/// A table's entry in the persisted catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TableEntry {
    pub name: String,
    pub schema: Schema,
    pub meta_root: PageId,
}

/// A secondary index: what it indexes and where its B+tree lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEntry {
    pub name: String,
    pub table: String,
    /// Key columns as named in the table's schema, in key order.
    pub columns: Vec<String>,
    pub unique: bool,
    pub tree: BTreeIndex,
    /// Included (non-key) columns of a covering index, as named in the schema.
    /// Stored in [`CatalogFile::covering`], not here, so that the serialized
    /// form of an entry is what older builds wrote.
    #[serde(skip)]
    pub include: Vec<String>,
    /// In an open transaction's view only: the index is not rebuilt yet for
    /// rows the transaction added (see `WriteTxn::snapshot`), so its `tree`
    /// is a placeholder that must not be read. Committed catalogs never have one.
    #[serde(skip)]
    pub stale: bool,
}

/// The included columns of one covering index (format 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CoveringEntry {
    pub index: String,
    pub columns: Vec<String>,
    pub types: Vec<DataType>,
}

/// The catalog blob's contents.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CatalogFile {
    pub tables: Vec<TableEntry>,
    pub views: Vec<ViewDef>,
    /// Pages below the committed extent that nothing references.
    pub free_pages: Vec<PageId>,
    /// After the tables, so a catalog written before indexes existed is its prefix.
    pub indexes: Vec<IndexEntry>,
    /// Last, so a catalog written before covering indexes existed (format ≤ 3)
    /// is its prefix.
    pub covering: Vec<CoveringEntry>,
    /// Last, so a catalog written before constraints existed (format ≤ 6) is
    /// its prefix.
    pub rules: Vec<TableRules>,
    /// The last three, so a catalog written before sequences existed (format
    /// 7) is its prefix.
    pub sequences: Vec<SequenceEntry>,
    /// The two pages of sequence values (empty until a sequence is created).
    pub sequence_pages: Vec<PageId>,
    /// The id the next sequence gets (ids are never reused).
    pub next_sequence_id: u64,
}

/// The catalog blob as written before sequences existed (format 7).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CatalogFileV7 {
    pub tables: Vec<TableEntry>,
    pub views: Vec<ViewDef>,
    pub free_pages: Vec<PageId>,
    pub indexes: Vec<IndexEntry>,
    pub covering: Vec<CoveringEntry>,
    pub rules: Vec<TableRules>,
}

impl From<CatalogFileV7> for CatalogFile {
    fn from(v: CatalogFileV7) -> Self {
        CatalogFile {
            tables: v.tables,
            views: v.views,
            free_pages: v.free_pages,
            indexes: v.indexes,
            covering: v.covering,
            rules: v.rules,
            ..CatalogFile::default()
        }
    }
}

/// The catalog blob as written before constraints and defaults existed
/// (formats 4 to 6).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CatalogFileV6 {
    pub tables: Vec<TableEntry>,
    pub views: Vec<ViewDef>,
    pub free_pages: Vec<PageId>,
    pub indexes: Vec<IndexEntry>,
    pub covering: Vec<CoveringEntry>,
}

impl From<CatalogFileV6> for CatalogFile {
    fn from(v: CatalogFileV6) -> Self {
        CatalogFile {
            tables: v.tables,
            views: v.views,
            free_pages: v.free_pages,
            indexes: v.indexes,
            covering: v.covering,
            rules: Vec::new(),
            ..CatalogFile::default()
        }
    }
}

/// The catalog blob as written before covering indexes existed (read for
/// compatibility).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CatalogFileV2 {
    pub tables: Vec<TableEntry>,
    pub views: Vec<ViewDef>,
    pub free_pages: Vec<PageId>,
    pub indexes: Vec<IndexEntry>,
}

impl From<CatalogFileV2> for CatalogFile {
    fn from(v: CatalogFileV2) -> Self {
        CatalogFile {
            tables: v.tables,
            views: v.views,
            free_pages: v.free_pages,
            indexes: v.indexes,
            covering: Vec::new(),
            rules: Vec::new(),
            ..CatalogFile::default()
        }
    }
}

impl CatalogFile {
    /// Decodes a catalog blob of any format this build reads (the newest form
    /// first, then the older ones it extends), with the included columns put
    /// back into their index entries.
    pub(crate) fn decode(bytes: &[u8]) -> Result<CatalogFile, postcard::Error> {
        let mut data: CatalogFile = postcard::from_bytes(bytes)
            .or_else(|_| postcard::from_bytes::<CatalogFileV7>(bytes).map(CatalogFile::from))
            .or_else(|_| postcard::from_bytes::<CatalogFileV6>(bytes).map(CatalogFile::from))
            .or_else(|_| postcard::from_bytes::<CatalogFileV2>(bytes).map(CatalogFile::from))
            .or_else(|_| postcard::from_bytes::<CatalogFileV1>(bytes).map(CatalogFile::from))?;
        for c in &data.covering {
            if let Some(ix) = data.indexes.iter_mut().find(|i| i.name == c.index) {
                ix.include = c.columns.clone();
                ix.tree.include_types = c.types.clone();
            }
        }
        Ok(data)
    }

    /// The covering part of `indexes`, as stored.
    pub(crate) fn covering_of(indexes: &[IndexEntry]) -> Vec<CoveringEntry> {
        indexes
            .iter()
            .filter(|i| !i.include.is_empty())
            .map(|i| CoveringEntry {
                index: i.name.clone(),
                columns: i.include.clone(),
                types: i.tree.include_types.clone(),
            })
            .collect()
    }
}

/// The catalog blob as written before indexes existed (read for compatibility).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct CatalogFileV1 {
    pub tables: Vec<TableEntry>,
    pub views: Vec<ViewDef>,
    pub free_pages: Vec<PageId>,
}

impl From<CatalogFileV1> for CatalogFile {
    fn from(v: CatalogFileV1) -> Self {
        CatalogFile {
            tables: v.tables,
            views: v.views,
            free_pages: v.free_pages,
            indexes: Vec::new(),
            covering: Vec::new(),
            rules: Vec::new(),
            ..CatalogFile::default()
        }
    }
}

/// An immutable snapshot of the committed catalog. Readers hold an `Arc` to one;
/// pages it references are not reused while it lives.
pub struct Catalog {
    pub(crate) generation: u64,
    pub(crate) tables: BTreeMap<String, Arc<Table>>,
    pub(crate) views: BTreeMap<String, ViewDef>,
    pub(crate) indexes: BTreeMap<String, IndexEntry>,
    /// Defaults and constraints, by table.
    pub(crate) rules: BTreeMap<String, TableRules>,
    /// Sequences, by name.
    pub(crate) sequences: BTreeMap<String, SequenceEntry>,
    /// The two pages of sequence values, once a sequence was committed.
    pub(crate) sequence_pages: Option<[PageId; 2]>,
    pub(crate) next_sequence_id: u64,
    /// Pages of each table's metadata blob (freed when the table changes).
    pub(crate) table_blobs: BTreeMap<String, Vec<PageId>>,
    /// Pages of this catalog's own blob.
    pub(crate) blob_pages: Vec<PageId>,
    pub(crate) free_pages: Vec<PageId>,
}

impl Catalog {
    pub(crate) fn empty(generation: u64) -> Self {
        Catalog {
            generation,
            tables: BTreeMap::new(),
            views: BTreeMap::new(),
            indexes: BTreeMap::new(),
            rules: BTreeMap::new(),
            sequences: BTreeMap::new(),
            sequence_pages: None,
            next_sequence_id: 1,
            table_blobs: BTreeMap::new(),
            blob_pages: Vec::new(),
            free_pages: Vec::new(),
        }
    }

    /// Commit generation this snapshot belongs to.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.get(name).cloned()
    }

    pub fn table_names(&self) -> Vec<String> {
        self.tables.keys().cloned().collect()
    }

    pub fn view(&self, name: &str) -> Option<&ViewDef> {
        self.views.get(name)
    }

    pub fn view_names(&self) -> Vec<String> {
        self.views.keys().cloned().collect()
    }

    pub fn index(&self, name: &str) -> Option<&IndexEntry> {
        self.indexes.get(name)
    }

    /// Indexes of a table, by name.
    pub fn indexes_on(&self, table: &str) -> Vec<&IndexEntry> {
        let t = table.to_string();
        self.indexes.values().filter(|i| i.table == t).collect()
    }

    /// The defaults and constraints of a table, if it has any.
    pub fn rules(&self, table: &str) -> Option<&TableRules> {
        self.rules.get(table)
    }

    /// Every table's defaults and constraints.
    pub fn all_rules(&self) -> impl Iterator<Item = &TableRules> {
        self.rules.values()
    }

    /// Sequence `name`'s definition (its state as committed, not its current
    /// value: see `Storage::sequence_state`).
    pub fn sequence(&self, name: &str) -> Option<&SequenceEntry> {
        self.sequences.get(name)
    }

    /// Every sequence, by name.
    pub fn sequences(&self) -> impl Iterator<Item = &SequenceEntry> {
        self.sequences.values()
    }

    pub fn index_names(&self) -> Vec<String> {
        self.indexes.keys().cloned().collect()
    }

    /// Free pages recorded in this snapshot.
    pub fn free_page_count(&self) -> usize {
        self.free_pages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> IndexEntry {
        IndexEntry {
            name: name.into(),
            table: "t".into(),
            columns: vec!["k".into()],
            unique: false,
            tree: BTreeIndex {
                root: 7,
                height: 1,
                leaf_count: 1,
                entries: 3,
                key_types: vec![DataType::Integer],
                include_types: Vec::new(),
                unique: false,
                first_leaf: 7,
            },
            include: Vec::new(),
            stale: false,
        }
    }

    #[test]
    fn a_catalog_from_before_covering_indexes_still_decodes() {
        let old = CatalogFileV2 {
            indexes: vec![entry("t_k")],
            free_pages: vec![3, 4],
            ..CatalogFileV2::default()
        };
        let bytes = postcard::to_stdvec(&old).unwrap();
        let back = CatalogFile::decode(&bytes).unwrap();
        assert_eq!(back.indexes, old.indexes);
        assert_eq!(back.free_pages, vec![3, 4]);
        assert!(back.covering.is_empty());
    }

    #[test]
    fn a_catalog_from_before_constraints_decodes_and_rules_round_trip() {
        let old = CatalogFileV6 {
            indexes: vec![entry("t_k")],
            free_pages: vec![9],
            ..CatalogFileV6::default()
        };
        let back = CatalogFile::decode(&postcard::to_stdvec(&old).unwrap()).unwrap();
        assert_eq!(back.indexes, old.indexes);
        assert!(back.rules.is_empty());

        let rules = TableRules {
            table: "t".into(),
            defaults: vec![crate::rules::ColumnDefault {
                column: "v".into(),
                sql: "'x'".into(),
            }],
            keys: vec![crate::rules::KeyConstraint {
                name: "t_k".into(),
                primary: true,
                columns: vec!["k".into()],
            }],
            ..TableRules::default()
        };
        let file = CatalogFile {
            indexes: vec![entry("t_k")],
            rules: vec![rules.clone()],
            ..CatalogFile::default()
        };
        let back = CatalogFile::decode(&postcard::to_stdvec(&file).unwrap()).unwrap();
        assert_eq!(back.rules, vec![rules]);
    }

    #[test]
    fn a_catalog_from_before_sequences_decodes_and_sequences_round_trip() {
        let old = CatalogFileV7 {
            indexes: vec![entry("t_k")],
            free_pages: vec![5],
            ..CatalogFileV7::default()
        };
        let back = CatalogFile::decode(&postcard::to_stdvec(&old).unwrap()).unwrap();
        assert_eq!(back.free_pages, vec![5]);
        assert!(back.sequences.is_empty() && back.sequence_pages.is_empty());

        let def = crate::sequence::SequenceDef {
            name: "s".into(),
            id: 3,
            data_type: DataType::BigInt,
            type_name: "bigint".into(),
            start: 1,
            increment: 1,
            min: 1,
            max: i64::MAX,
            cycle: false,
            owned_by: None,
            identity: None,
        };
        let file = CatalogFile {
            sequences: vec![SequenceEntry {
                state: def.initial_state(),
                def,
            }],
            sequence_pages: vec![10, 11],
            next_sequence_id: 4,
            ..CatalogFile::default()
        };
        let back = CatalogFile::decode(&postcard::to_stdvec(&file).unwrap()).unwrap();
        assert_eq!(back.sequences, file.sequences);
        assert_eq!(back.sequence_pages, vec![10, 11]);
        assert_eq!(back.next_sequence_id, 4);
    }

    #[test]
    fn included_columns_round_trip_through_the_trailing_field() {
        let mut cover = entry("t_k_cover");
        cover.include = vec!["v".into(), "d".into()];
        cover.tree.include_types = vec![
            DataType::Varchar(None),
            DataType::Decimal {
                precision: 12,
                scale: 2,
            },
        ];
        let indexes = vec![entry("t_k"), cover.clone()];
        let file = CatalogFile {
            covering: CatalogFile::covering_of(&indexes),
            indexes,
            ..CatalogFile::default()
        };
        assert_eq!(file.covering.len(), 1);
        let bytes = postcard::to_stdvec(&file).unwrap();
        let back = CatalogFile::decode(&bytes).unwrap();
        assert_eq!(back.indexes[0], entry("t_k"));
        assert_eq!(back.indexes[1], cover);
        assert_eq!(back.indexes[1].tree.include_types.len(), 2);
    }

    /// Types are stored by their position in `DataType`: SMALLINT, added
    /// last, leaves every older type's encoding (and so older files) as it was.
    #[test]
    fn type_positions_are_stable() {
        let code = |t: DataType| postcard::to_stdvec(&t).unwrap();
        assert_eq!(code(DataType::Boolean), [0]);
        assert_eq!(code(DataType::Integer), [1]);
        assert_eq!(code(DataType::Timestamp), [8]);
        assert_eq!(
            code(DataType::Array(kura_common::ElemType::Timestamp)),
            [9, 8]
        );
        assert_eq!(code(DataType::SmallInt), [10]);
        assert_eq!(
            code(DataType::Array(kura_common::ElemType::SmallInt)),
            [9, 9]
        );
        let back: DataType = postcard::from_bytes(&code(DataType::SmallInt)).unwrap();
        assert_eq!(back, DataType::SmallInt);
    }
}
