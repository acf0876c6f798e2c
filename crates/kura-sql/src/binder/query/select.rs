//! Binding of one SELECT: FROM, WHERE, GROUP BY, HAVING, DISTINCT, the select list, windows
//! and ORDER BY.

use super::*;

impl Binder<'_> {
    pub(super) fn bind_select(
        &mut self,
        s: &ast::Select,
        order: &[ast::OrderByExpr],
        top_k: Option<usize>,
        outer: &[Scope],
    ) -> SqlResult<BoundQuery> {
        if let Some(rewritten) = crate::binder::table_fn::select_list_srf(s) {
            return self.bind_select(&rewritten, order, top_k, outer);
        }
        crate::binder::clauses::check_select(s)?;
        let ties = self.with_ties.take();
        let (mut plan, scope) = self.bind_from(&s.from, outer)?;

        // WHERE: subquery predicates become semi/anti joins, the rest one filter.
        if let Some(w) = &s.selection {
            let mut parts = Vec::new();
            ast_conjuncts(w, &mut parts);
            let mut filters = Vec::new();
            let mut cx = ExprCtx::new(&scope, outer);
            cx.clause = Some("WHERE");
            for p in parts {
                if let Some(joined) = self.try_subquery_conjunct(p, plan.clone(), &scope, outer)? {
                    plan = joined;
                    continue;
                }
                let e = self.bind_expr(p, &mut cx)?;
                filters.push(self.check_bool(e, "WHERE", span_pos(p))?);
            }
            plan = self.attach_pending(plan, std::mem::take(&mut cx.pending))?;
            if let Some(f) = conjunction(filters) {
                plan = Logical::Filter {
                    input: Box::new(plan),
                    predicate: f,
                };
            }
        }

        // Set-returning items of the select list repeat the rows first.
        let srf = crate::binder::select_srf::has_srf_items(s);
        let rewritten;
        let (mut plan, scope, s) = if srf {
            let (p, sc, sel) = self.bind_srf_items(s, plan, &scope, outer)?;
            rewritten = sel;
            (p, sc, &rewritten)
        } else {
            (plan, scope, s)
        };
        // Select list, HAVING and ORDER BY are bound collecting aggregates.
        let mut cx = ExprCtx::new(&scope, outer);
        cx.agg = Some(AggCollector::default());
        cx.win = Some(crate::binder::vocab::WindowCollector::new(&s.named_window)?);
        let mut items: Vec<(String, PhysExpr, Pos)> = Vec::new();
        for item in &s.projection {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    let b = self.bind_expr(e, &mut cx)?;
                    items.push((derived_name(e), b, span_pos(e)));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let b = self.bind_expr(expr, &mut cx)?;
                    items.push((norm(alias), b, span_pos(expr)));
                }
                ast::SelectItem::Wildcard(_) => {
                    if scope.cols.is_empty() {
                        return Err(SqlError::Syntax(
                            "SELECT * with no tables specified is not valid".into(),
                        ));
                    }
                    for c in scope
                        .cols
                        .iter()
                        .filter(|c| !crate::binder::is_hidden(&c.name) && !c.qualified_only)
                    {
                        items.push((c.name.clone(), col(c.id, c.ty), Pos::default()));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            crate::binder::object_name(n)?.0
                        }
                        _ => return Err(SqlError::unsupported("expression.*", Pos::default())),
                    };
                    let cols: Vec<&ScopeCol> = scope
                        .cols
                        .iter()
                        .filter(|c| c.qualifier.as_deref() == Some(q.as_str()))
                        .filter(|c| !crate::binder::is_hidden(&c.name))
                        .collect();
                    if cols.is_empty() {
                        return Err(SqlError::UnknownTable {
                            name: q,
                            pos: Pos::default(),
                            suggestion: None,
                        });
                    }
                    for c in cols {
                        items.push((c.name.clone(), col(c.id, c.ty), Pos::default()));
                    }
                }
                other => {
                    return Err(SqlError::unsupported(
                        format!("select item {other}"),
                        Pos::default(),
                    ))
                }
            }
        }
        let group_items: Vec<&ast::Expr> = match &s.group_by {
            ast::GroupByExpr::Expressions(v, _) => v.iter().collect(),
            ast::GroupByExpr::All(_) => {
                return Err(SqlError::unsupported("GROUP BY ALL", Pos::default()))
            }
        };
        // The distinct keys, and the grouping sets over them if any.
        let (group_asts, sets) = crate::binder::grouping_sets::expand(&group_items)?;
        let having = match &s.having {
            Some(h) => {
                let (win, clause) = (cx.win.take(), cx.clause.replace("HAVING"));
                let e = self.bind_expr(h, &mut cx);
                (cx.win, cx.clause) = (win, clause);
                Some(self.check_bool(e?, "HAVING", span_pos(h))?)
            }
            None => None,
        };
        // ORDER BY keys: select-list positions, output names, or expressions.
        enum OrderRef {
            Item(usize),
            Expr(PhysExpr),
        }
        let mut order_refs = Vec::new();
        // DISTINCT ON keys name what ORDER BY keys may: positions, output
        // names, or expressions.
        let distinct_on: Vec<&ast::Expr> = match &s.distinct {
            Some(ast::Distinct::On(keys)) => keys.iter().collect(),
            _ => Vec::new(),
        };
        let mut on_refs = Vec::new();
        let clauses = order
            .iter()
            .map(|o| (&o.expr, Some(&o.options), "ORDER BY"))
            .chain(distinct_on.iter().map(|e| (*e, None, "DISTINCT ON")));
        for (expr, options, clause) in clauses {
            let r = match expr {
                e if position_literal(e).is_some() => OrderRef::Item(at_position(
                    &items,
                    position_literal(e).unwrap_or(0),
                    clause,
                    e,
                )?),
                ast::Expr::Identifier(id) if items.iter().any(|i| i.0 == norm(id)) => {
                    OrderRef::Item(items.iter().position(|i| i.0 == norm(id)).unwrap_or(0))
                }
                e => {
                    let b = self.bind_expr(e, &mut cx)?;
                    match items.iter().position(|i| i.1 == b) {
                        Some(k) => OrderRef::Item(k),
                        None => OrderRef::Expr(b),
                    }
                }
            };
            match options {
                Some(o) => order_refs.push((r, o)),
                None => on_refs.push(r),
            }
        }

        let mut collector = cx.agg.take().unwrap_or_default();
        let mut windows = cx.win.take().unwrap_or_default();
        let mut pending = std::mem::take(&mut cx.pending);
        let aggregating = !collector.aggs.is_empty()
            || !group_asts.is_empty()
            || having.is_some()
            || sets.is_some()
            || !collector.groupings.is_empty();
        if srf && (aggregating || !windows.calls.is_empty()) {
            // PostgreSQL runs them after aggregates and windows; here they
            // would repeat the rows before.
            return Err(SqlError::unsupported(
                "set-returning functions in a SELECT list that aggregates or has a window",
                Pos::default(),
            ));
        }
        // Grouping sets, and `grouping(...)`, aggregate per set into fresh key ids.
        let by_sets = sets.is_some() || !collector.groupings.is_empty();
        // A subquery inside an aggregate's argument (`count(x IN (SELECT ...))`)
        // is evaluated per input row: its join goes below the aggregation.
        let agg_refs: HashSet<ColId> = collector
            .aggs
            .iter()
            .flat_map(|a| a.0.exprs())
            .flat_map(refs_of)
            .collect();
        let (below, above): (Vec<Pending>, Vec<Pending>) = pending.drain(..).partition(|p| {
            p.mark
                .into_iter()
                .chain(p.plan.output())
                .any(|c| agg_refs.contains(&c))
        });
        let pending = above;
        if !below.is_empty() {
            plan = self.attach_pending(plan, below)?;
        }
        let mut having = having;
        if aggregating {
            // GROUP BY expressions: positions, output names, or expressions over FROM.
            let mut gcx = ExprCtx::new(&scope, outer);
            gcx.clause = Some("GROUP BY");
            let mut group: Vec<(PhysExpr, ColId)> = Vec::new();
            // The index in `group` of each of `group_asts`.
            let mut slots: Vec<usize> = Vec::new();
            for g in &group_asts {
                let e = match g {
                    e if position_literal(e).is_some() => {
                        let k =
                            at_position(&items, position_literal(e).unwrap_or(0), "GROUP BY", e)?;
                        items[k].1.clone()
                    }
                    ast::Expr::Identifier(id)
                        if scope.lookup(None, &norm(id)).is_empty()
                            && items.iter().any(|i| i.0 == norm(id)) =>
                    {
                        items
                            .iter()
                            .find(|i| i.0 == norm(id))
                            .map(|i| i.1.clone())
                            .unwrap_or_else(|| col(0, DataType::Integer))
                    }
                    e => self.bind_expr(e, &mut gcx)?,
                };
                if let Some(i) = group.iter().position(|(x, _)| *x == e) {
                    slots.push(i);
                    continue;
                }
                let id = match &e {
                    PhysExpr::Column { index, .. } if !by_sets => *index,
                    _ => self.cols.add(&e.to_string(), e.data_type()),
                };
                slots.push(group.len());
                group.push((e, id));
            }
            let mut groupings = Vec::new();
            for (id, args, pos) in &collector.groupings {
                let mut idx = Vec::new();
                for a in args {
                    let Some(i) = group.iter().position(|(x, _)| x == a) else {
                        return Err(SqlError::Grouping {
                            message: "arguments to GROUPING must be grouping expressions of the associated query level".into(),
                            pos: *pos,
                        });
                    };
                    idx.push(i);
                }
                groupings.push((*id, idx));
            }
            if !gcx.pending.is_empty() {
                return Err(SqlError::unsupported(
                    "subqueries in GROUP BY",
                    Pos::default(),
                ));
            }
            let mut valid: HashSet<ColId> = group.iter().map(|g| g.1).collect();
            valid.extend(collector.aggs.iter().map(|a| a.1));
            valid.extend(collector.groupings.iter().map(|g| g.0));
            valid.extend(windows.ids());
            let outer_ids: HashSet<ColId> = outer
                .iter()
                .flat_map(|s| s.cols.iter().map(|c| c.id))
                .collect();
            valid.extend(&outer_ids);
            // A subquery evaluated above the aggregation may read only grouped
            // columns of this query (PostgreSQL: "subquery uses ungrouped column").
            let own: HashSet<ColId> = scope.cols.iter().map(|c| c.id).collect();
            for p in &pending {
                let mut used = p.plan.free_columns();
                p.on.iter().for_each(|e| used.extend(refs_of(e)));
                let own_produced: HashSet<ColId> = p.plan.output().into_iter().collect();
                if let Some(bad) = used
                    .into_iter()
                    .find(|c| own.contains(c) && !valid.contains(c) && !own_produced.contains(c))
                {
                    return Err(SqlError::NotGrouped {
                        name: self.cols.name(bad).to_string(),
                        pos: Pos::default(),
                    });
                }
            }
            for p in &pending {
                valid.extend(p.plan.output());
                valid.extend(p.mark);
            }
            // Keys that are not a column kept under its own id.
            let replaceable: Vec<(PhysExpr, ColId)> = group
                .iter()
                .filter(|(e, id)| !matches!(e, PhysExpr::Column { index, .. } if index == id))
                .cloned()
                .collect();
            let fix = |b: &Binder, e: &PhysExpr, pos: Pos| -> SqlResult<PhysExpr> {
                let e = replace_subexprs(e, &replaceable);
                if let Some(bad) = refs_of(&e).into_iter().find(|c| !valid.contains(c)) {
                    return Err(SqlError::NotGrouped {
                        name: b.cols.name(bad).to_string(),
                        pos,
                    });
                }
                Ok(e)
            };
            for it in items.iter_mut() {
                it.1 = fix(self, &it.1, it.2)?;
            }
            if let Some(h) = having.take() {
                having = Some(fix(self, &h, Pos::default())?);
            }
            for r in order_refs
                .iter_mut()
                .map(|(r, _)| r)
                .chain(on_refs.iter_mut())
            {
                if let OrderRef::Expr(e) = r {
                    *e = fix(self, e, Pos::default())?;
                }
            }
            windows.map_exprs(&mut |e| fix(self, e, Pos::default()))?;
            if by_sets {
                for (g, _) in &group {
                    crate::binder::json_fn::refuse_json_key(g.data_type(), "GROUPING SETS", false)?;
                }
            } else {
                group = self.group_jsonb_by_value(group, &mut collector.aggs, "GROUP BY")?;
            }
            plan = if by_sets {
                let sets = sets.map_or_else(
                    || vec![(0..group.len()).collect()],
                    |s| {
                        s.iter()
                            .map(|set| set.iter().map(|&k| slots[k]).collect())
                            .collect()
                    },
                );
                self.plan_grouping_sets(plan, &group, &collector.aggs, &sets, &groupings)
            } else {
                Logical::Aggregate {
                    input: Box::new(plan),
                    group,
                    aggs: collector.aggs,
                }
            };
        }
        plan = self.attach_pending(plan, pending)?;
        if let Some(h) = having {
            plan = Logical::Filter {
                input: Box::new(plan),
                predicate: h,
            };
        }
        plan = self.plan_windows(plan, windows);

        // Projection (with hidden ORDER BY columns), DISTINCT, ORDER BY.
        let mut exprs: Vec<(PhysExpr, ColId)> = Vec::new();
        let mut out = Vec::new();
        for (name, e, _) in &items {
            let id = self.cols.add(name, e.data_type());
            self.same_record(e, id);
            exprs.push((e.clone(), id));
            out.push((name.clone(), id));
        }
        let mut keys = Vec::new();
        let mut hidden = false;
        // DISTINCT ON's keys, as columns of the projection (hidden ones added).
        let mut on_keys = Vec::new();
        let mut on_hidden: Vec<(PhysExpr, PhysExpr)> = Vec::new();
        for r in on_refs {
            on_keys.push(match r {
                OrderRef::Item(k) => col(exprs[k].1, exprs[k].0.data_type()),
                OrderRef::Expr(e) => {
                    hidden = true;
                    let id = self.cols.add("?distinct on?", e.data_type());
                    exprs.push((e.clone(), id));
                    on_hidden.push((e.clone(), col(id, e.data_type())));
                    col(id, e.data_type())
                }
            });
        }
        for (r, opts) in order_refs {
            let e = match r {
                OrderRef::Item(k) => col(exprs[k].1, exprs[k].0.data_type()),
                // The same expression as a DISTINCT ON key: the same column.
                OrderRef::Expr(e) if on_hidden.iter().any(|(x, _)| *x == e) => on_hidden
                    .iter()
                    .find(|(x, _)| *x == e)
                    .map(|(_, c)| c.clone())
                    .unwrap_or(e),
                OrderRef::Expr(e) => {
                    if matches!(s.distinct, Some(ast::Distinct::Distinct)) {
                        return Err(SqlError::InvalidValue {
                            message: "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                            pos: Pos::default(),
                        });
                    }
                    hidden = true;
                    let id = self.cols.add("?order?", e.data_type());
                    exprs.push((e.clone(), id));
                    col(id, e.data_type())
                }
            };
            refuse_array_order(&e)?;
            keys.push(sort_key(e, opts));
        }
        plan = Logical::Project {
            input: Box::new(plan),
            exprs,
        };
        match &s.distinct {
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => {
                let group = out
                    .iter()
                    .map(|(_, id)| (col(*id, self.cols.ty(*id)), *id))
                    .collect();
                let mut aggs = Vec::new();
                let group = self.group_jsonb_by_value(group, &mut aggs, "SELECT DISTINCT")?;
                plan = Logical::Aggregate {
                    input: Box::new(plan),
                    group,
                    aggs,
                };
            }
            Some(ast::Distinct::On(_)) => {
                plan = self.plan_distinct_on(plan, on_keys, &keys)?;
                hidden = true;
            }
        }
        if let Some((offset, n)) = ties {
            plan = self.with_ties(plan, &keys, offset, n);
            // The numbering columns go with the final projection.
            hidden = true;
        }
        if !keys.is_empty() {
            plan = Logical::Sort {
                input: Box::new(plan),
                keys,
                limit: top_k,
            };
        }
        if hidden {
            let exprs = out
                .iter()
                .map(|(_, id)| (col(*id, self.cols.ty(*id)), *id))
                .collect();
            plan = Logical::Project {
                input: Box::new(plan),
                exprs,
            };
        }
        Ok(BoundQuery { plan, out })
    }
}
