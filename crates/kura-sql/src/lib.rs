//! kura-sql: the SQL front end — parse (sqlparser), bind names and types, build and optimize logical plans, and lower them to physical plans for kura-exec. It never touches pages.
