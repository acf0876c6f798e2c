//! System relations in FROM: the catalog snapshot a statement reads, the relations and
//! views of pg_catalog and information_schema, and their never-filled array columns.

use super::*;

impl Binder<'_> {
    /// The catalog snapshot for this statement, taken on first use.
    pub(in crate::binder) fn snapshot(&mut self) -> Rc<Snapshot> {
        if let Some(s) = &self.system {
            return s.clone();
        }
        let mut relations = Vec::new();
        let mut indexes = Vec::new();
        let mut rules = Vec::new();
        let mut names = self.catalog.relation_names();
        names.sort();
        for name in names {
            if let Some(t) = self.catalog.table(&name) {
                let (pages, page) = t.stored_pages();
                for ix in t.listed_indexes() {
                    indexes.push((
                        ix.name.clone(),
                        name.clone(),
                        ix.columns.clone(),
                        ix.unique,
                        ix.include.clone(),
                        (ix.stored_pages(), page),
                    ));
                }
                let r = self.catalog.rules(&name);
                if r != crate::catalog::TableRulesInfo::default() {
                    rules.push((name.clone(), r));
                }
                relations.push((
                    name,
                    RelKind::Table,
                    t.columns().to_vec(),
                    None,
                    t.row_count(),
                    (pages, page),
                ));
            } else if let Some(v) = self.catalog.view(&name) {
                let columns = self.view_columns(&name, &v.columns);
                relations.push((name, RelKind::View, columns, Some(v.sql), 0, (0, 0)));
            }
        }
        let snap = Rc::new(Snapshot::new(SnapshotInput {
            relations,
            indexes,
            settings: self.catalog.settings(),
            rules,
            sequences: self.catalog.sequences(),
            database: self.catalog.session().map(|s| s.database.clone()),
        }));
        self.system = Some(snap.clone());
        snap
    }

    /// A view's columns with the types its query binds to. A view over the
    /// system catalogs is typed text while the snapshot it reads is being
    /// taken (its types would need that very snapshot).
    pub(super) fn view_columns(&self, name: &str, declared: &[String]) -> Vec<SourceColumn> {
        let text_columns = || {
            declared
                .iter()
                .map(|n| SourceColumn {
                    name: n.clone(),
                    data_type: TEXT,
                    nullable: true,
                })
                .collect()
        };
        if self.building_system {
            return text_columns();
        }
        let mut b = Binder::new(self.catalog, Params::default());
        b.building_system = true;
        let id = ast::Ident::with_quote('"', name);
        let obj = ast::ObjectName(vec![ast::ObjectNamePart::Identifier(id)]);
        match b.bind_relation(&obj, None) {
            Ok((_, scope)) => scope
                .cols
                .iter()
                .map(|c| SourceColumn {
                    name: c.name.clone(),
                    data_type: c.ty,
                    nullable: true,
                })
                .collect(),
            Err(_) => text_columns(),
        }
    }

    /// The system relation a FROM name refers to: `pg_catalog.x` and
    /// `information_schema.x` always, a bare `x` only when `bare` (no user
    /// relation or CTE of that name shadows it).
    pub(in crate::binder) fn system_relation(
        &mut self,
        name: &ast::ObjectName,
        bare: bool,
    ) -> Option<Arc<dyn TableSource>> {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| match p {
                ast::ObjectNamePart::Identifier(id) => Some(norm(id)),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let (schema, rel) = match parts.as_slice() {
            [rel] if bare => (None, rel),
            [.., schema, rel] if SYSTEM_SCHEMAS.contains(&schema.as_str()) => {
                (Some(schema.as_str()), rel)
            }
            _ => return None,
        };
        crate::system::SYSTEM_RELATIONS
            .iter()
            .find(|r| r.name == rel && r.schema == schema.unwrap_or("pg_catalog"))?;
        let snap = self.snapshot();
        snap.relation(schema, rel)
    }

    /// Remembers which columns of a system relation's scan are its array
    /// columns (NULL in every row), for `CASE WHEN array IS NOT NULL ...`.
    pub(in crate::binder) fn note_null_arrays(
        &mut self,
        plan: &crate::logical::Logical,
        scope: &crate::binder::Scope,
    ) {
        let crate::logical::Logical::Scan { table, .. } = plan else {
            return;
        };
        let Some((schema, name)) = table.name().split_once('.') else {
            return;
        };
        let Some(rel) = crate::system::SYSTEM_RELATIONS
            .iter()
            .find(|r| r.schema == schema && r.name == name)
        else {
            return;
        };
        for i in rel.array_columns() {
            if let Some(c) = scope.cols.get(i) {
                self.null_arrays.insert(c.id);
            }
        }
    }

    /// Whether `e` is `array IS NOT NULL` for a catalog array column: false in
    /// every row, since kura's catalogs hold no arrays.
    pub(super) fn is_never_true(&mut self, e: &ast::Expr, cx: &mut ExprCtx) -> bool {
        let ast::Expr::IsNotNull(x) = e else {
            return false;
        };
        if !matches!(
            x.as_ref(),
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)
        ) {
            return false;
        }
        matches!(self.bind_expr(x, cx), Ok(PhysExpr::Column { index, .. }) if self.null_arrays.contains(&index))
    }

    /// Whether `name` is qualified by a system schema.
    pub(in crate::binder) fn names_system_schema(name: &ast::ObjectName) -> bool {
        let n = name.0.len();
        n >= 2
            && matches!(&name.0[n - 2], ast::ObjectNamePart::Identifier(id)
                if SYSTEM_SCHEMAS.contains(&norm(id).as_str()))
    }
}
