//! Estimates remembered per node while a finished logical plan is lowered.
//!
//! Lowering asks for the estimate of every node, and an estimate walks the node's
//! whole subtree: a chain of n set operations cost n² scan estimates (500 UNION
//! branches took seconds to plan). While the plan is borrowed, its nodes stay at
//! their addresses, so an estimate can be kept by address; nodes built during
//! lowering are not in the plan and are estimated afresh.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;

use super::cardinality::Estimate;
use crate::logical::Logical;

struct Memo {
    /// Addresses of the borrowed plan's nodes: only these are remembered.
    nodes: HashSet<usize>,
    known: HashMap<usize, Estimate>,
}

thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// Remembers estimates of `plan`'s nodes until dropped; the borrow keeps the plan
/// unchanged (and its nodes where they are) for as long.
#[must_use = "estimates are remembered only while the memo lives"]
pub struct EstimateMemo<'a> {
    outer: Option<Memo>,
    _plan: PhantomData<&'a Logical>,
}

impl<'a> EstimateMemo<'a> {
    pub fn over(plan: &'a Logical) -> EstimateMemo<'a> {
        let mut nodes = HashSet::new();
        let mut todo = vec![plan];
        while let Some(p) = todo.pop() {
            nodes.insert(address(p));
            todo.extend(p.children());
        }
        let memo = Memo {
            nodes,
            known: HashMap::new(),
        };
        let outer = MEMO.with(|m| m.replace(Some(memo)));
        EstimateMemo {
            outer,
            _plan: PhantomData,
        }
    }
}

impl Drop for EstimateMemo<'_> {
    fn drop(&mut self) {
        MEMO.with(|m| m.replace(self.outer.take()));
    }
}

fn address(p: &Logical) -> usize {
    p as *const Logical as usize
}

/// The remembered estimate of `plan`, if it is a node of the memo's plan.
pub(super) fn recall(plan: &Logical) -> Option<Estimate> {
    MEMO.with(|m| {
        m.borrow()
            .as_ref()
            .and_then(|m| m.known.get(&address(plan)).cloned())
    })
}

/// Keeps `e` as `plan`'s estimate, if `plan` is a node of the memo's plan.
pub(super) fn remember(plan: &Logical, e: &Estimate) {
    MEMO.with(|m| {
        if let Some(m) = m.borrow_mut().as_mut() {
            let key = address(plan);
            if m.nodes.contains(&key) {
                m.known.insert(key, e.clone());
            }
        }
    })
}
