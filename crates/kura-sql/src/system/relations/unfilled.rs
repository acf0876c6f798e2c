//! The catalogs of things kura does not have (descriptions, triggers, rules, policies,
//! publications, inheritance, partitions, foreign tables, enums): their columns, and no
//! rows.

use super::*;

/// `pg_catalog.pg_description`.
pub(super) const PG_DESCRIPTION: SystemRelation = rel(
    PG,
    "pg_description",
    2609,
    "r",
    "objoid:o classoid:o objsubid:i description:t",
    no_rows,
);

/// `pg_catalog.pg_shdescription`.
pub(super) const PG_SHDESCRIPTION: SystemRelation = rel(
    PG,
    "pg_shdescription",
    2396,
    "r",
    "objoid:o classoid:o description:t",
    no_rows,
);

/// `pg_catalog.pg_inherits`.
pub(super) const PG_INHERITS: SystemRelation = rel(
    PG,
    "pg_inherits",
    2611,
    "r",
    "inhrelid:o inhparent:o inhseqno:i inhdetachpending:b",
    no_rows,
);

/// `pg_catalog.pg_trigger`.
pub(super) const PG_TRIGGER: SystemRelation = rel(
    PG,
    "pg_trigger",
    2620,
    "r",
    "oid:o tgrelid:o tgparentid:o tgname:t tgfoid:o tgtype:i tgenabled:t \
         tgisinternal:b tgconstrrelid:o tgconstrindid:o tgconstraint:o \
         tgdeferrable:b tginitdeferred:b tgnargs:i tgattr:v tgargs:t tgqual:t \
         tgoldtable:t tgnewtable:t",
    no_rows,
);

/// `pg_catalog.pg_rewrite`.
pub(super) const PG_REWRITE: SystemRelation = rel(
    PG,
    "pg_rewrite",
    2618,
    "r",
    "oid:o rulename:t ev_class:o ev_type:t ev_enabled:t is_instead:b ev_qual:t ev_action:t",
    no_rows,
);

/// `pg_catalog.pg_policy`.
pub(super) const PG_POLICY: SystemRelation = rel(
    PG,
    "pg_policy",
    3256,
    "r",
    "oid:o polname:t polrelid:o polcmd:t polpermissive:b polroles:a polqual:t \
         polwithcheck:t",
    no_rows,
);

/// `pg_catalog.pg_statistic_ext`.
pub(super) const PG_STATISTIC_EXT: SystemRelation = rel(
    PG,
    "pg_statistic_ext",
    3381,
    "r",
    "oid:o stxrelid:o stxname:t stxnamespace:o stxowner:o stxstattarget:i \
         stxkeys:v stxkind:a stxexprs:t",
    no_rows,
);

/// `pg_catalog.pg_publication`.
pub(super) const PG_PUBLICATION: SystemRelation = rel(
    PG,
    "pg_publication",
    6104,
    "r",
    "oid:o pubname:t pubowner:o puballtables:b pubinsert:b pubupdate:b \
         pubdelete:b pubtruncate:b pubviaroot:b",
    no_rows,
);

/// `pg_catalog.pg_publication_rel`.
pub(super) const PG_PUBLICATION_REL: SystemRelation = rel(
    PG,
    "pg_publication_rel",
    6106,
    "r",
    "oid:o prpubid:o prrelid:o prqual:t prattrs:a",
    no_rows,
);

/// `pg_catalog.pg_publication_namespace`.
pub(super) const PG_PUBLICATION_NAMESPACE: SystemRelation = rel(
    PG,
    "pg_publication_namespace",
    6237,
    "r",
    "oid:o pnpubid:o pnnspid:o",
    no_rows,
);

/// `pg_catalog.pg_partitioned_table`.
pub(super) const PG_PARTITIONED_TABLE: SystemRelation = rel(
    PG,
    "pg_partitioned_table",
    3350,
    "r",
    "partrelid:o partstrat:t partnatts:i partdefid:o partattrs:a partclass:a \
         partcollation:a partexprs:t",
    no_rows,
);

/// `pg_catalog.pg_foreign_table`.
pub(super) const PG_FOREIGN_TABLE: SystemRelation = rel(
    PG,
    "pg_foreign_table",
    3118,
    "r",
    "ftrelid:o ftserver:o ftoptions:a",
    no_rows,
);

/// `pg_catalog.pg_enum`.
pub(super) const PG_ENUM: SystemRelation = rel(
    PG,
    "pg_enum",
    3501,
    "r",
    "oid:o enumtypid:o enumsortorder:f enumlabel:t",
    no_rows,
);
