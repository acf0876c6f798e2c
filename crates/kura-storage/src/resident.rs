//! Memory objects for the buffer pool (paper 001's conclusions): the map of which
//! table column or index each page belongs to (for the access-density policy), and
//! resident indexes — an index's pages, interior nodes first, held in the pool so
//! no replacement policy can evict them (`SET resident_indexes`).

use std::collections::BTreeSet;

use kura_cache::ObjectMap;

use crate::catalog::Catalog;
use crate::error::{StorageError, StorageResult};
use crate::file::aligned::AlignedBuf;
use crate::file::page::PAGE_HEADER;
use crate::file::{DbFile, PageId};
use crate::index::node::Node;
use crate::index::BTreeIndex;

/// An index's pages: interior nodes level by level from the root, then the
/// leaves in key order. Interior nodes are read straight from the file (not
/// through the buffer pool, so listing pages does not disturb what is cached);
/// leaves are named by their parents and not read.
pub fn index_pages(file: &DbFile, tree: &BTreeIndex) -> StorageResult<(Vec<PageId>, Vec<PageId>)> {
    if tree.height <= 1 {
        return Ok((Vec::new(), vec![tree.root]));
    }
    let mut buf = AlignedBuf::new(file.page_size());
    let mut interior = Vec::new();
    let mut level = vec![tree.root];
    let mut leaves = Vec::new();
    // Bounded by the height the catalog records, so a damaged child pointer can
    // not make the walk loop.
    for depth in 0..tree.height - 1 {
        let mut next = Vec::new();
        for &page in &level {
            file.read_page(page, &mut buf)?;
            let node = Node::parse(&buf[PAGE_HEADER..file.page_size()]).map_err(|what| {
                StorageError::Corrupt {
                    path: file.path().to_path_buf(),
                    page,
                    what,
                }
            })?;
            if node.is_leaf() {
                return Err(StorageError::Corrupt {
                    path: file.path().to_path_buf(),
                    page,
                    what: format!(
                        "index leaf at depth {depth} of a tree of height {}",
                        tree.height
                    ),
                });
            }
            next.extend((0..node.count()).map(|i| node.child(i)));
            interior.push(page);
        }
        level = next;
        if depth + 2 == tree.height {
            leaves = std::mem::take(&mut level);
        }
    }
    Ok((interior, leaves))
}

/// One object per table column (its data and overflow pages) and per index.
pub fn object_map(file: &DbFile, catalog: &Catalog) -> StorageResult<ObjectMap> {
    let mut map = ObjectMap::new();
    for name in catalog.table_names() {
        let Some(table) = catalog.table(&name) else {
            continue;
        };
        for (col, meta) in table.schema().columns.iter().zip(&table.meta().columns) {
            let pages = meta
                .zones
                .iter()
                .map(|z| z.page)
                .chain(meta.overflow.iter().copied());
            map.add(format!("{name}.{}", col.name), pages);
        }
    }
    for name in catalog.index_names() {
        let Some(entry) = catalog.index(&name) else {
            continue;
        };
        let (interior, leaves) = index_pages(file, &entry.tree)?;
        map.add(name, interior.into_iter().chain(leaves));
    }
    Ok(map)
}

/// Names buffer pages for the memory-object registry (paper 002's profiler):
/// a page's table column or index, and whether it is a column or an index page.
pub fn page_namer(
    file: &DbFile,
    catalog: &Catalog,
) -> StorageResult<impl Fn(u64) -> Option<(String, Option<String>)>> {
    let objects = object_map(file, catalog)?;
    let indexes: BTreeSet<String> = catalog.index_names().into_iter().collect();
    Ok(move |page: u64| {
        let name = objects.object_of(page).and_then(|o| objects.name(o))?;
        let kind = if indexes.contains(name) {
            "index"
        } else {
            "column"
        };
        Some((name.to_string(), Some(kind.to_string())))
    })
}

/// What a `resident_indexes` value asks the pool to hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResidentSpec {
    /// The indexes, by their catalog names.
    pub indexes: Vec<String>,
    /// Only their interior nodes (`interior:` prefix): every search then costs at
    /// most one read, the leaf, for a small fraction of the index's pages.
    pub interior_only: bool,
}

/// The indexes a `resident_indexes` value names: `all`, `none` (or empty), or
/// a comma-separated list of index names, each of which must exist; prefixed
/// `interior:` (`interior:all`, `interior:idx1,idx2`) for their interior nodes only.
pub fn parse_resident(spec: &str, catalog: &Catalog) -> StorageResult<ResidentSpec> {
    let spec = spec.trim();
    let (interior_only, spec) = match spec.split_once(':') {
        Some((prefix, rest)) if prefix.trim().eq_ignore_ascii_case("interior") => {
            (true, rest.trim())
        }
        _ => (false, spec),
    };
    if spec.is_empty() || spec.eq_ignore_ascii_case("none") {
        return Ok(ResidentSpec::default());
    }
    if spec.eq_ignore_ascii_case("all") {
        return Ok(ResidentSpec {
            indexes: catalog.index_names(),
            interior_only,
        });
    }
    let mut names = BTreeSet::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let entry = catalog
            .index(part)
            .ok_or_else(|| StorageError::NoSuchIndex(part.to_string()))?;
        names.insert(entry.name.clone());
    }
    Ok(ResidentSpec {
        indexes: names.into_iter().collect(),
        interior_only,
    })
}

/// The pages to hold for `spec`: every index's interior nodes first (they
/// serve every search), then the leaves unless only interior nodes are asked for.
pub fn resident_pages(
    file: &DbFile,
    catalog: &Catalog,
    spec: &ResidentSpec,
) -> StorageResult<Vec<PageId>> {
    let mut interior = Vec::new();
    let mut leaves = Vec::new();
    for name in &spec.indexes {
        let entry = catalog
            .index(name)
            .ok_or_else(|| StorageError::NoSuchIndex(name.clone()))?;
        let (i, l) = index_pages(file, &entry.tree)?;
        interior.extend(i);
        leaves.extend(l);
    }
    if !spec.interior_only {
        interior.extend(leaves);
    }
    Ok(interior)
}
