"""A target server's global settings, changed for a settings variant and put back: the one place benchapp runs
SET GLOBAL (MySQL, MariaDB) or ALTER SYSTEM (PostgreSQL).

Names reach the server only after campaigns.settings_variants has checked them (letters, digits, underscores) and
the server's own catalogue has been asked for them with the name as a bound parameter; values are bound as
parameters (or, for a MySQL number, written as the number the strict pattern matched: MySQL refuses a quoted
number for a numeric variable). PostgreSQL's ALTER SYSTEM takes no parameters, so its value is quoted by psycopg's
sql.Literal and its name by sql.Identifier.

Connections go through campaigns.probes (time-outs, no clear-text password, never benchapp's own database).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import MySQLdb
import psycopg
from psycopg import sql

from campaigns.probes import (
    ProbeError,
    mysql_connect,
    mysql_error_parts,
    mysql_probe_error,
    pg_connect,
    pg_probe_error,
    pg_unreachable,
)
from campaigns.settings_variants import NUMBER, setting_matches, setting_name_problem
from campaigns.sysbench.command import Connection

log = logging.getLogger(__name__)

# PostgreSQL contexts a reload reaches (pg_settings.context): "backend" ones reach new sessions, which is what
# sysbench opens. "postmaster" and "internal" need a restart or cannot change at all.
PG_RELOADABLE = ("user", "superuser", "sighup", "backend", "superuser-backend")
# How long the read-back waits for a reload to reach a new session.
READ_BACK_S = 5.0
_READ_BACK_POLL_S = 0.1
# MySQL errors of a refused SET GLOBAL: 1238 read-only variable, 1227/1229... access and scope.
_MYSQL_READ_ONLY = 1238
_MYSQL_DENIED = (1227, 1044, 1142, 1370)
_MYSQL_SESSION_ONLY = (1228,)


@dataclass(frozen=True, slots=True)
class Original:
    """A setting's value before a change; `in_auto_conf`: PostgreSQL's ALTER SYSTEM had set it."""

    value: str
    in_auto_conf: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "in_auto_conf": self.in_auto_conf}


class SettingRefused(Exception):
    """A setting the target will not take as a variant; the message names it and says why."""


def _checked(names: list[str]) -> list[str]:
    for name in names:
        problem = setting_name_problem(name)
        if problem:
            raise SettingRefused(problem)
    return names


# ---------------------------------------------------------------- checks at save time


def settings_check(conn: Connection, settings: dict[str, str]) -> list[str]:
    """The problems that make these settings unusable on this server, one sentence each naming the setting (an
    empty list: all can be changed at run time by this user). ProbeError when the server cannot be asked."""
    _checked(list(settings))
    if not settings:
        return []
    if conn.driver == "mysql":
        return _mysql_check(conn, settings)
    return _pg_check(conn, settings)


def _mysql_check(conn: Connection, settings: dict[str, str]) -> list[str]:
    problems: list[str] = []
    try:
        db = mysql_connect(conn)
        try:
            cur = db.cursor()
            for name in settings:
                cur.execute("SHOW GLOBAL VARIABLES LIKE %s", [name])
                if not any(str(row[0]).lower() == name for row in cur.fetchall()):
                    problems.append(f"{name}: no such global variable on this server")
                    continue
                # Setting a variable to its own value changes nothing and asks the server the two questions
                # that matter: is it dynamic, and may this user change it.
                try:
                    cur.execute(f"SET GLOBAL {name} = @@GLOBAL.{name}")
                except MySQLdb.DatabaseError as exc:
                    code, text = mysql_error_parts(exc)
                    if code is None or code >= 2000:  # the connection, not the variable
                        raise
                    if code == _MYSQL_READ_ONLY:
                        problems.append(f"{name}: read-only at run time (it needs a server restart)")
                    elif code in _MYSQL_DENIED:
                        problems.append(f"{name}: user '{conn.user}' may not change it ({text})")
                    elif code in _MYSQL_SESSION_ONLY:
                        problems.append(f"{name}: a session variable, not a global one")
                    else:
                        problems.append(f"{name}: the server refuses to set it ({text})")
        finally:
            db.close()
    except MySQLdb.Error as exc:
        raise mysql_probe_error(exc, conn) from None
    return problems


def _pg_check(conn: Connection, settings: dict[str, str]) -> list[str]:
    problems: list[str] = []
    try:
        with pg_connect(conn) as db, db.cursor() as cur:
            cur.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            row = cur.fetchone()
            superuser = bool(row and row[0])
            version = int(db.info.server_version)
            may_reload = superuser
            if not superuser:
                cur.execute("SELECT has_function_privilege('pg_reload_conf()', 'EXECUTE')")
                row = cur.fetchone()
                may_reload = bool(row and row[0])
            for name, value in settings.items():
                cur.execute("SELECT context, vartype, enumvals FROM pg_settings WHERE name = %s", [name])
                row = cur.fetchone()
                if row is None:
                    problems.append(f"{name}: no such setting on this server")
                    continue
                context, vartype, enumvals = row
                if context not in PG_RELOADABLE:
                    problems.append(f"{name}: takes effect only at a server restart (context {context})")
                    continue
                if vartype == "enum" and enumvals and value.lower() not in [str(v).lower() for v in enumvals]:
                    problems.append(f"{name}: {value!r} is not one of {', '.join(enumvals)}")
                    continue
                if vartype == "bool" and not (setting_matches(value, "on") or setting_matches(value, "off")):
                    problems.append(f"{name}: {value!r} is not on or off")
                    continue
                allowed = superuser
                if not superuser and version >= 150000:
                    cur.execute("SELECT has_parameter_privilege(%s, 'ALTER SYSTEM')", [name])
                    row = cur.fetchone()
                    allowed = bool(row and row[0])
                if not allowed:
                    problems.append(f"{name}: user '{conn.user}' may not change it (ALTER SYSTEM needs a superuser "
                                    "or GRANT ALTER SYSTEM ON PARAMETER)")
                elif not may_reload:
                    problems.append(f"{name}: user '{conn.user}' may not run pg_reload_conf()")
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None
    return problems


# ---------------------------------------------------------------- reading, changing, putting back


def settings_read(conn: Connection, names: list[str]) -> dict[str, Original]:
    """The settings' global values now (from a new session: what sysbench's sessions get)."""
    _checked(names)
    if not names:
        return {}
    if conn.driver == "mysql":
        return {name: Original(value) for name, value in _mysql_read(conn, names).items()}
    found: dict[str, Original] = {}
    for name, (current, _setting, source, sourcefile) in _pg_read(conn, names).items():
        # A value from postgresql.auto.conf (or from a file this user may not see) is put back with ALTER SYSTEM
        # SET; one from postgresql.conf or the default is put back with RESET, which leaves auto.conf as it was.
        in_auto = source == "configuration file" and (sourcefile is None or sourcefile.endswith("postgresql.auto.conf"))
        found[name] = Original(current, in_auto_conf=in_auto)
    return found


def _mysql_read(conn: Connection, names: list[str]) -> dict[str, str]:
    try:
        db = mysql_connect(conn)
        try:
            cur = db.cursor()
            cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})".format(", ".join(["%s"] * len(names))),
                        names)
            values = {str(k).lower(): "" if v is None else str(v) for k, v in cur.fetchall()}
        finally:
            db.close()
    except MySQLdb.Error as exc:
        raise mysql_probe_error(exc, conn) from None
    missing = [n for n in names if n not in values]
    if missing:
        raise ProbeError(f"the server has no global variable {missing[0]}")
    return values


def _pg_read(conn: Connection, names: list[str]) -> dict[str, tuple[str, str, str, str | None]]:
    try:
        with pg_connect(conn) as db, db.cursor() as cur:
            cur.execute("SELECT name, current_setting(name), setting, source, sourcefile FROM pg_settings"
                        " WHERE name = ANY(%s)", [names])
            values = {str(n): (str(cur_v), str(s), str(src), f) for n, cur_v, s, src, f in cur.fetchall()}
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None
    missing = [n for n in names if n not in values]
    if missing:
        raise ProbeError(f"the server has no setting {missing[0]}")
    return values


def _mysql_set(cur: Any, name: str, value: str) -> None:
    if NUMBER.match(value):
        cur.execute(f"SET GLOBAL {name} = {value}")  # a number the strict pattern matched, nothing else
    else:
        cur.execute(f"SET GLOBAL {name} = %s", [value])


def settings_apply(conn: Connection, values: dict[str, str]) -> None:
    """Sets the settings globally (SET GLOBAL; ALTER SYSTEM and a reload). SettingRefused names a setting the
    server refused; ProbeError when the server cannot be reached."""
    _checked(list(values))
    if values:
        _settings_write(conn, values, [])


def settings_restore(conn: Connection, originals: dict[str, Original]) -> None:
    """Puts the settings back as they were before a change (errors as settings_apply's)."""
    _checked(list(originals))
    if not originals:
        return
    if conn.driver == "mysql":
        _settings_write(conn, {name: o.value for name, o in originals.items()}, [])
        return
    _settings_write(conn, {name: o.value for name, o in originals.items() if o.in_auto_conf},
                    [name for name, o in originals.items() if not o.in_auto_conf])


def _settings_write(conn: Connection, sets: dict[str, str], resets: list[str]) -> None:
    """The one write of settings, for a change and for putting it back: SET GLOBAL of each of `sets` in one
    session (MySQL, MariaDB: `resets` is empty there), or ALTER SYSTEM SET and RESET and one reload (PostgreSQL)."""
    if conn.driver != "mysql":
        _pg_alter(conn, list(sets.items()), resets)
        return
    try:
        db = mysql_connect(conn)
        try:
            cur = db.cursor()
            for name, value in sets.items():
                try:
                    _mysql_set(cur, name, value)
                except MySQLdb.DatabaseError as exc:
                    code, text = mysql_error_parts(exc)
                    if code is not None and code < 2000:  # the server's refusal, not a lost connection
                        raise SettingRefused(f"{name} = {value}: refused by the server ({text})") from None
                    raise
        finally:
            db.close()
    except MySQLdb.Error as exc:
        raise mysql_probe_error(exc, conn) from None


def _pg_alter(conn: Connection, sets: list[tuple[str, str]], resets: list[str]) -> None:
    try:
        with pg_connect(conn) as db:
            for name, value in sets:
                try:
                    db.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
                except psycopg.Error as exc:
                    if pg_unreachable(exc):
                        raise
                    raise SettingRefused(f"{name} = {value}: refused by the server "
                                         f"({str(exc).strip().splitlines()[0]})") from None
            for name in resets:
                db.execute(sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(name)))
            db.execute("SELECT pg_reload_conf()")
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None


def settings_read_back(conn: Connection, wanted: dict[str, str], *, timeout_s: float = READ_BACK_S) -> dict[str, str]:
    """The settings as a new session sees them, once they all match `wanted` or after timeout_s (a reload
    reaches the server's processes a moment after pg_reload_conf() returns)."""
    names = _checked(list(wanted))
    deadline = time.monotonic() + timeout_s
    while True:
        if conn.driver == "mysql":
            got = _mysql_read(conn, names)
            spellings: dict[str, tuple[str, ...]] = {name: (value,) for name, value in got.items()}
        else:
            rows = _pg_read(conn, names)
            got = {name: row[0] for name, row in rows.items()}
            spellings = {name: (row[0], row[1]) for name, row in rows.items()}
        matched = {n: next((v for v in spellings[n] if setting_matches(wanted[n], v)), None) for n in names}
        if all(v is not None for v in matched.values()) or time.monotonic() >= deadline:
            return {n: matched[n] or got[n] for n in names}
        time.sleep(_READ_BACK_POLL_S)


def settings_mismatches(wanted: dict[str, str], got: dict[str, str]) -> list[str]:
    """One sentence per setting the server did not take: its name, the value wanted and the value read."""
    return [f"{name}: wanted {value}, the server has {got.get(name, '(nothing)')}"
            for name, value in wanted.items() if not setting_matches(value, got.get(name))]


# ---------------------------------------------------------------- a session kept for the restore, and a fresh one

# PostgreSQL's SQLSTATE of a configuration file it cannot parse (ALTER SYSTEM on a postgresql.auto.conf that no
# longer parses: "could not parse contents of file").
_PG_CONFIG_FILE_ERROR = "F0000"
# How often, and how far apart, a fresh session asks whether the configuration files still parse: a log line
# written into one reaches it a moment after the statement.
_CONFIG_CHECKS = 3
_CONFIG_CHECK_GAP_S = 0.25


def pg_auto_conf(conn: Connection) -> dict[str, str] | None:
    """What postgresql.auto.conf sets now ({name: value}), None when this user may not read it (pg_file_settings
    is a superuser's): what a restore writes back if the file stops parsing."""
    try:
        with pg_connect(conn) as db, db.cursor() as cur:
            try:
                cur.execute("SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE %s AND error IS NULL"
                            " ORDER BY seqno", ["%/postgresql.auto.conf"])
            except psycopg.errors.InsufficientPrivilege:
                return None
            return {str(name): str(value) for name, value in cur.fetchall()}
    except psycopg.Error as exc:
        raise pg_probe_error(exc, conn) from None


def fresh_session_problem(conn: Connection) -> str:
    """Why a new session can no longer log in and work after a change ("" when it can): it cannot connect or
    run a query (a library it must load, a connection limit…), or, on PostgreSQL, the server's configuration files
    no longer parse (a log written into postgresql.auto.conf: the next start would fail)."""
    try:
        if conn.driver == "mysql":
            db = mysql_connect(conn)
            try:
                db.cursor().execute("SELECT 1")
            finally:
                db.close()
            return ""
        with pg_connect(conn) as pg, pg.cursor() as cur:
            cur.execute("SELECT 1")
            for attempt in range(_CONFIG_CHECKS):
                try:
                    cur.execute("SELECT sourcefile, sourceline, error FROM pg_file_settings WHERE error IS NOT NULL"
                                " LIMIT 1")
                except psycopg.errors.InsufficientPrivilege:
                    return ""  # not this user's to see; the login and the query worked
                row = cur.fetchone()
                if row is not None:
                    return (f"the server's configuration files no longer parse ({row[0]}:{row[1]}: {row[2]}): its "
                            "next start would fail")
                if attempt + 1 < _CONFIG_CHECKS:
                    time.sleep(_CONFIG_CHECK_GAP_S)
    except (MySQLdb.Error, psycopg.Error) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"a new session cannot log in and run a query ({text[:300]})"
    except ProbeError as exc:
        return f"a new session cannot log in and run a query ({exc})"
    return ""


def restore_statements(conn: Connection, originals: dict[str, Original],
                       auto_conf: dict[str, str] | None = None) -> list[str]:
    """The exact statements that put the originals back, for a DBA when benchapp could not (values quoted as
    SQL literals: they come from the server, never from the variant)."""
    return driver_restore_statements(conn.driver, originals, auto_conf)


def driver_restore_statements(driver: str, originals: dict[str, Original],
                              auto_conf: dict[str, str] | None = None) -> list[str]:
    """restore_statements for a driver, without a connection (a server that no longer answers)."""
    if driver == "mysql":
        return [f"SET GLOBAL {name} = {o.value if NUMBER.match(o.value) else _sql_quote(o.value)};"
                for name, o in originals.items()]
    lines = [f"ALTER SYSTEM SET {name} = {_sql_quote(o.value)};" if o.in_auto_conf else f"ALTER SYSTEM RESET {name};"
             for name, o in originals.items()]
    lines.append("SELECT pg_reload_conf();")
    options = " ".join(f"-c {name}=" for name in originals if name.endswith("preload_libraries"))
    if options:
        lines.insert(0, f"-- new sessions cannot start: connect with PGOPTIONS='{options}' psql …")
    if auto_conf is not None:
        lines.append("-- if ALTER SYSTEM answers 'could not parse contents of file postgresql.auto.conf':")
        lines.append("ALTER SYSTEM RESET ALL;")
        lines += [f"ALTER SYSTEM SET {name} = {_sql_quote(value)};" for name, value in auto_conf.items()]
        lines.append("SELECT pg_reload_conf();")
    return lines


def _sql_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


class KeptSession:
    """A session to the target opened before a change and kept for putting it back: a change that locks new
    sessions out (a library every session must load, a connection limit) cannot lock this one out."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        try:
            self.db: Any = mysql_connect(conn) if conn.driver == "mysql" else pg_connect(conn)
        except MySQLdb.Error as exc:
            raise mysql_probe_error(exc, conn) from None
        except psycopg.Error as exc:
            raise pg_probe_error(exc, conn) from None

    def close(self) -> None:
        try:
            self.db.close()
        except (MySQLdb.Error, psycopg.Error):
            pass

    def restore(self, originals: dict[str, Original], auto_conf: dict[str, str] | None = None) -> None:
        """Puts the originals back through this session. On PostgreSQL, when postgresql.auto.conf no longer
        parses (ALTER SYSTEM refuses it), the file is written anew as it was before the change (ALTER SYSTEM RESET
        ALL, which reads nothing, then the recorded entries) when `auto_conf` is known. SettingRefused or
        ProbeError says why it could not."""
        _checked(list(originals))
        if self.conn.driver == "mysql":
            try:
                cur = self.db.cursor()
                for name, o in originals.items():
                    _mysql_set(cur, name, o.value)
            except MySQLdb.Error as exc:
                code, text = mysql_error_parts(exc)
                if code is not None and code < 2000:
                    raise SettingRefused(f"refused by the server ({text})") from None
                raise mysql_probe_error(exc, self.conn) from None
            return
        try:
            try:
                for name, o in originals.items():
                    statement = (sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(o.value))
                                 if o.in_auto_conf else sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(name)))
                    self.db.execute(statement)
            except psycopg.Error as exc:
                if exc.sqlstate != _PG_CONFIG_FILE_ERROR or auto_conf is None:
                    raise
                log.warning("postgresql.auto.conf of %s:%s no longer parses (%s): writing it anew as it was",
                            self.conn.host, self.conn.port, str(exc).strip().splitlines()[0])
                self.db.execute("ALTER SYSTEM RESET ALL")
                for name, value in auto_conf.items():
                    self.db.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name),
                                                                               sql.Literal(value)))
            self.db.execute("SELECT pg_reload_conf()")
        except psycopg.Error as exc:
            if pg_unreachable(exc):
                raise pg_probe_error(exc, self.conn) from None
            raise SettingRefused(f"refused by the server ({str(exc).strip().splitlines()[0]})") from None
