//! Files in FROM: `read_parquet('f.parquet')`, `read_csv('f.csv', header => true)`,
//! `read_json('f.jsonl')` (a path
//! or a glob) and a quoted name with a file extension, `FROM "f.parquet"`, bound to the
//! table the catalog opens for them (DESIGN.md "Files and Arrow").

use sqlparser::ast;

use super::vocab::ExprCtx;
use super::{norm, Binder, Scope};
use crate::catalog::FileFormat;
use crate::error::{Pos, SqlError, SqlResult};
use crate::logical::Logical;
use kura_common::Value;
use kura_exec::expr::PhysExpr;

/// Whether a FROM-clause function reads files (`read_parquet`, `read_csv`).
pub(super) fn is_file_function(name: &str) -> bool {
    matches!(
        name,
        "read_parquet"
            | "parquet_scan"
            | "read_csv"
            | "read_csv_auto"
            | "read_json"
            | "read_json_auto"
            | "read_ndjson"
            | "read_ndjson_auto"
    )
}

/// The type a name says (`'INTEGER'`, `'DECIMAL(15,2)'`), as in a cast.
fn type_named(name: &str, p: Pos) -> SqlResult<kura_common::DataType> {
    let t = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(name)
        .and_then(|mut parser| {
            let t = parser.parse_data_type()?;
            parser.expect_token(&sqlparser::tokenizer::Token::EOF)?;
            Ok(t)
        })
        .map_err(|_| SqlError::InvalidValue {
            message: format!("{name:?} is not a type"),
            pos: p,
        })?;
    super::types::sql_type(&t, p)
}

/// A named argument's name and value (`header => true`).
fn named(a: &ast::FunctionArg) -> Option<(String, &ast::Expr)> {
    let (name, arg) = match a {
        ast::FunctionArg::Named { name, arg, .. } => (norm(name), arg),
        ast::FunctionArg::ExprNamed {
            name: ast::Expr::Identifier(i),
            arg,
            ..
        } => (norm(i), arg),
        _ => return None,
    };
    match arg {
        ast::FunctionArgExpr::Expr(e) => Some((name, e)),
        _ => None,
    }
}

impl Binder<'_> {
    /// `read_parquet('pattern')` / `read_csv('pattern', header => true, delim => ';')` in
    /// FROM, with its alias.
    pub(super) fn bind_file_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
        ordinality: bool,
        p: Pos,
    ) -> SqlResult<(Logical, Scope)> {
        if ordinality {
            return Err(SqlError::unsupported(
                format!("WITH ORDINALITY on {name}"),
                p,
            ));
        }
        let patterns = match args.first() {
            Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))) => {
                self.text_list_arg(e, name, p)?
            }
            _ => {
                return Err(SqlError::UnknownFunction {
                    name: format!("{name} without a file name (its first argument)"),
                    pos: p,
                    suggestion: None,
                })
            }
        };
        let csv = name.starts_with("read_csv");
        let mut options = kura_exec::files::csv::CsvOptions::default();
        for a in &args[1..] {
            let Some((option, e)) = named(a) else {
                return Err(SqlError::UnknownFunction {
                    name: format!(
                        "{name} with {} arguments (options are named: option => value)",
                        args.len()
                    ),
                    pos: p,
                    suggestion: None,
                });
            };
            match option.as_str() {
                "header" if csv => options.header = Some(self.bool_arg(e, name, p)?),
                "delim" | "sep" | "delimiter" if csv => {
                    options.delimiter = Some(self.byte_arg(e, &option, p)?)
                }
                "quote" if csv => options.quote = Some(self.byte_arg(e, &option, p)?),
                "escape" if csv => options.escape = Some(self.byte_arg(e, &option, p)?),
                "skip" if csv => options.skip = self.count_arg(e, &option, p)?,
                "dateformat" | "date_format" if csv => {
                    options.date_format = Some(self.format_arg(e, &option, p)?)
                }
                "timestampformat" | "timestamp_format" if csv => {
                    options.timestamp_format = Some(self.format_arg(e, &option, p)?)
                }
                "names" | "column_names" if csv => {
                    options.names = Some(self.text_list_arg(e, &option, p)?)
                }
                "types" | "column_types" | "dtypes" if csv => {
                    let mut types = Vec::new();
                    for t in self.text_list_arg(e, &option, p)? {
                        types.push(type_named(&t, p)?);
                    }
                    options.types = Some(types);
                }
                "all_varchar" if csv => options.all_text = self.bool_arg(e, &option, p)?,
                "nullstr" | "null" if csv => options.null = Some(self.text_arg(e, &option, p)?),
                "columns" if csv => {
                    return Err(SqlError::unsupported(
                        format!(
                            "{name} option columns (a {{name: type}} struct is DuckDB's syntax; \
                             write names => ['a', 'b'], types => ['INTEGER', 'TEXT'])"
                        ),
                        p,
                    ))
                }
                other => {
                    let known = if csv {
                        " (header, delim, quote, escape, skip, names, types, all_varchar, \
                         nullstr, dateformat, timestampformat are)"
                    } else {
                        ""
                    };
                    return Err(SqlError::unsupported(
                        format!("{name} option {other}{known}"),
                        p,
                    ));
                }
            }
        }
        let format = if csv {
            FileFormat::Csv(options)
        } else if name.starts_with("read_json") || name.starts_with("read_ndjson") {
            FileFormat::Json
        } else {
            FileFormat::Parquet
        };
        let qualifier = alias.map_or(name.to_string(), |a| norm(&a.name));
        self.bind_file(&format, &patterns, &qualifier, alias, p)
    }

    /// The table of the files `patterns` name (paths or globs), under `qualifier`.
    pub(super) fn bind_file(
        &mut self,
        format: &FileFormat,
        patterns: &[String],
        qualifier: &str,
        alias: Option<&ast::TableAlias>,
        p: Pos,
    ) -> SqlResult<(Logical, Scope)> {
        let table = self
            .catalog
            .file_table(format, patterns)
            .map_err(|e| SqlError::Data {
                message: e.to_string(),
                code: e.sqlstate(),
                pos: p,
            })?;
        if let Some(a) = alias {
            if a.columns.len() > table.columns().len() {
                return Err(SqlError::mismatch(
                    format!(
                        "table \"{qualifier}\" has {} columns available but {} columns specified",
                        table.columns().len(),
                        a.columns.len()
                    ),
                    p,
                ));
            }
        }
        self.scan_scope(table, qualifier, alias, true)
    }

    /// A constant argument of a file function.
    fn const_arg(&mut self, e: &ast::Expr, name: &str, p: Pos) -> SqlResult<Value> {
        let scope = Scope::default();
        let mut cx = ExprCtx::new(&scope, &[]);
        match super::types::fold(self.bind_expr(e, &mut cx)?) {
            PhysExpr::Literal {
                data_type: kura_common::DataType::Array(_),
                ..
            } => Err(SqlError::TypeMismatch {
                message: format!(
                    "{name} takes a list written as ['a', 'b'] or ARRAY['a', 'b'], not an array value"
                ),
                pos: p,
            }),
            PhysExpr::Literal { value, .. } if cx.pending.is_empty() => Ok(value),
            _ => Err(SqlError::unsupported(
                format!("{name} with an argument that is not a constant"),
                p,
            )),
        }
    }

    /// A text constant: the file name of function `name`, or the value of option `name`.
    fn text_arg(&mut self, e: &ast::Expr, name: &str, p: Pos) -> SqlResult<String> {
        let what = if is_file_function(name) {
            "a file name"
        } else {
            "text"
        };
        match self.const_arg(e, name, p)? {
            Value::Text(s) => Ok(s),
            Value::Null => Err(SqlError::InvalidValue {
                message: format!("{name}: {what} is NULL"),
                pos: p,
            }),
            _ => Err(SqlError::TypeMismatch {
                message: format!("{name} takes {what}"),
                pos: p,
            }),
        }
    }

    /// Text constants: one, or an array of them (`['a.csv', 'b.csv']`).
    fn text_list_arg(&mut self, e: &ast::Expr, name: &str, p: Pos) -> SqlResult<Vec<String>> {
        match e {
            ast::Expr::Array(a) => {
                if a.elem.is_empty() {
                    return Err(SqlError::InvalidValue {
                        message: format!("{name}: an empty list"),
                        pos: p,
                    });
                }
                a.elem.iter().map(|x| self.text_arg(x, name, p)).collect()
            }
            _ => Ok(vec![self.text_arg(e, name, p)?]),
        }
    }

    fn bool_arg(&mut self, e: &ast::Expr, name: &str, p: Pos) -> SqlResult<bool> {
        match self.const_arg(e, name, p)? {
            Value::Boolean(b) => Ok(b),
            _ => Err(SqlError::TypeMismatch {
                message: format!("{name} takes true or false"),
                pos: p,
            }),
        }
    }

    /// A count of zero or more (lines to skip).
    fn count_arg(&mut self, e: &ast::Expr, option: &str, p: Pos) -> SqlResult<u64> {
        let n = match self.const_arg(e, option, p)? {
            Value::Integer(n) => i64::from(n),
            Value::BigInt(n) => n,
            _ => {
                return Err(SqlError::TypeMismatch {
                    message: format!("{option} takes a whole number"),
                    pos: p,
                })
            }
        };
        u64::try_from(n).map_err(|_| SqlError::InvalidValue {
            message: format!("{option} must be 0 or more, not {n}"),
            pos: p,
        })
    }

    /// A strftime format (`'%d/%m/%Y'`), checked.
    fn format_arg(&mut self, e: &ast::Expr, option: &str, p: Pos) -> SqlResult<String> {
        let format = self.text_arg(e, option, p)?;
        kura_exec::files::csv::check_datetime_format(&format).map_err(|m| {
            SqlError::InvalidValue {
                message: format!("{option}: {m}"),
                pos: p,
            }
        })?;
        Ok(format)
    }

    /// One ASCII character (a delimiter or quote), `'\t'` or `E'\t'` for a tab.
    fn byte_arg(&mut self, e: &ast::Expr, option: &str, p: Pos) -> SqlResult<u8> {
        let text = self.text_arg(e, option, p)?;
        let text = if text == "\\t" {
            "\t".to_string()
        } else {
            text
        };
        match text.as_bytes() {
            [b] if b.is_ascii() && *b != b'\n' && *b != b'\r' => Ok(*b),
            _ => Err(SqlError::InvalidValue {
                message: format!("{option} must be one ASCII character, not {text:?}"),
                pos: p,
            }),
        }
    }
}
