"""The `sql` template's rule: one read-only query over the job's own views, checked on Spark's own parse tree.

A text filter cannot follow Spark's grammar (comments, quoting, `FROM v INSERT …`, hints, identifiers in
backquotes), so the statement is parsed by the session's own SQL parser into an unresolved logical plan, and that
plan is walked before anything runs (`spark.sql` executes commands at once). Every plan node must be one of the
query nodes below (an allow-list: a command, an insert, a data-source relation or anything new in a later Spark is
refused); a relation must have a plain name (not `text`.`/path` or `db`.`table`); a table-valued function must be
one of a few generators; a function one of Spark's built-in functions, minus those that reach Java or files. Once
the query is analysed (which runs nothing), `check_analyzed` walks the resolved plan: no command, and every relation
it reads is one of the job's views.

A query over Delta tables (the `delta_query` template) may also name the job's tables, registered in the session's
catalog, and read one at an earlier version (``VERSION AS OF n`` / ``TIMESTAMP AS OF t``): the only place time travel
is allowed, and only on a plain name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from sparkjobs.errors import InvalidArguments

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RULE = "only one read-only query over the job's views is allowed"

_LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
_ANALYSIS = "org.apache.spark.sql.catalyst.analysis."
_EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."

QUERY_NODES = frozenset({
    *(_LOGICAL + name for name in (
        "Project", "Filter", "Aggregate", "Join", "LateralJoin", "Sort", "GlobalLimit", "LocalLimit", "Offset",
        "Distinct", "Union", "Intersect", "Except", "SubqueryAlias", "UnresolvedWith", "WithWindowDefinition",
        "OneRowRelation", "LocalRelation", "Generate", "Sample", "Pivot", "Unpivot", "RepartitionByExpression",
    )),
    _EXPRESSIONS + "PipeOperator",  # `|>` syntax: a marker plan node over the query's own nodes
    *(_ANALYSIS + name for name in (
        "UnresolvedRelation", "UnresolvedInlineTable", "UnresolvedSubqueryColumnAliases", "UnresolvedHaving",
        "UnresolvedQualify", "UnresolvedTableValuedFunction",
    )),
})
# The parser's unresolved expressions a query may hold; every other expression must be a concrete one of
# catalyst's expression packages (operators, literals, casts, subqueries, lambdas...).
UNRESOLVED_EXPRESSIONS = frozenset(_ANALYSIS + name for name in (
    "UnresolvedAttribute", "UnresolvedStar", "UnresolvedAlias", "UnresolvedFunction", "UnresolvedGenerator",
    "UnresolvedExtractValue", "UnresolvedRegex", "UnresolvedOrdinal", "MultiAlias",
))
TABLE_FUNCTIONS = frozenset({
    "range", "explode", "explode_outer", "inline", "inline_outer", "posexplode", "posexplode_outer", "stack",
    "json_tuple", "variant_explode", "variant_explode_outer",
})
# Built-in functions that call Java methods or read files named by their arguments.
FORBIDDEN_FUNCTIONS = {
    "reflect": "Java reflection", "java_method": "Java reflection", "try_reflect": "Java reflection",
    "from_protobuf": "it reads a descriptor file", "to_protobuf": "it reads a descriptor file",
    "from_avro": "it may read a schema file", "to_avro": "it may read a schema file",
}
# Statements that are not Commands in Spark's class tree but act like them.
COMMAND_LIKE = frozenset({_LOGICAL + "InsertIntoDir", _LOGICAL + "InsertIntoStatement",
                          _ANALYSIS + "UnresolvedExecuteImmediate"})
FORBIDDEN_EXPRESSIONS = frozenset(_EXPRESSIONS + name for name in ("CallMethodViaReflection", "TryReflect"))
LABELS = {
    "InsertIntoDir": "INSERT OVERWRITE DIRECTORY", "InsertIntoStatement": "INSERT", "SetCommand": "SET",
    "ResetCommand": "RESET", "AddJarsCommand": "ADD JAR", "AddFilesCommand": "ADD FILE",
    "AddArchivesCommand": "ADD ARCHIVE", "CreateFunction": "CREATE FUNCTION",
    "CreateSQLFunctionCommand": "CREATE FUNCTION", "CacheTable": "CACHE TABLE", "CacheTableAsSelect": "CACHE TABLE",
    "LoadData": "LOAD DATA", "DescribeRelation": "DESCRIBE", "ExplainCommand": "EXPLAIN",
    "AnalyzeTable": "ANALYZE TABLE", "RefreshTable": "REFRESH TABLE", "RefreshResource": "REFRESH",
    "SetCatalogAndNamespace": "USE", "CreateTempViewUsing": "CREATE TEMPORARY VIEW … USING",
    "CreateView": "CREATE VIEW", "CreateViewCommand": "CREATE VIEW", "CompoundBody": "a SQL script (BEGIN … END)",
    "UnresolvedExecuteImmediate": "EXECUTE IMMEDIATE", "CreateVariable": "DECLARE VARIABLE",
    "ScriptTransformation": "TRANSFORM … USING (a script)", "UnresolvedHint": "a hint",
    "NamedStreamingRelation": "STREAM", "RelationTimeTravel": "time travel",
}


TIME_TRAVEL = frozenset(package + "RelationTimeTravel" for package in (_LOGICAL, _ANALYSIS))
LOGICAL_RELATION = "org.apache.spark.sql.execution.datasources.LogicalRelation"


# Set on the session before a query is checked: `${env:X}`, `${system:p}` and `${spark.conf}` in the text would be
# replaced (environment, Java properties, configuration values) before the parser even sees it; and no file is
# read as a table by its path.
SESSION_CONF = {"spark.sql.variable.substitute": "false", "spark.sql.runSQLOnFiles": "false"}


class QueryRefused(InvalidArguments):
    """The `sql` argument is not one read-only query over the job's views."""

    def __init__(self, reason: str):
        super().__init__(f"{RULE}: {reason}")


def _label(class_name: str) -> str:
    simple = class_name.rsplit(".", 1)[-1].rstrip("$")
    if simple in LABELS:
        return LABELS[simple]
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", re.sub(r"(Command|Statement|Exec)$", "", simple)).upper()
    return words or simple


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(index) for index in range(scala_seq.size())]


def _quoted(parts: Iterable[str]) -> str:
    return ".".join(f"`{part}`" for part in parts)


def _visit_parts(node: Any, logical_plan: Any, plan: Callable[[Any], None], expression: Callable[[Any], None]) -> None:
    """What a plan node holds: its expressions, the plans inside it (a CTE's definitions, a subquery's) and its
    children, each handed to the walker's ``plan`` or ``expression``."""
    for item in _seq(node.expressions()):
        expression(item)
    for inner in _seq(node.innerChildren()):
        if logical_plan.isInstance(inner):
            plan(inner)
    for child in _seq(node.children()):
        plan(child)


class _PlanWalker:
    def __init__(self, spark: SparkSession, views: Iterable[str], *, time_travel: bool = False):
        jvm = spark._jvm
        self.jvm = jvm
        self.views = sorted(views)
        self.time_travel = time_travel
        self.command = jvm.java.lang.Class.forName(_LOGICAL + "Command")
        self.logical_plan = jvm.java.lang.Class.forName(_LOGICAL + "LogicalPlan")
        self.plan_expression = jvm.java.lang.Class.forName(_EXPRESSIONS + "PlanExpression")
        self.builtin = jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin()
        self.identifier = jvm.org.apache.spark.sql.catalyst.FunctionIdentifier

    def plan(self, node: Any) -> None:
        name = node.getClass().getName()
        if self.command.isInstance(node) or name in COMMAND_LIKE:
            raise QueryRefused(f"{_label(name)} is a command")
        simple = name.rsplit(".", 1)[-1]
        if name in TIME_TRAVEL and self.time_travel:
            if node.relation().getClass().getName() != _ANALYSIS + "UnresolvedRelation":
                raise QueryRefused("time travel (VERSION AS OF) applies to a table's name only")
            self._relation(node.relation())  # an argument of the node, not one of its children
        elif name not in QUERY_NODES:
            raise QueryRefused(f"{_label(name)} is not part of a read-only query")
        if simple == "UnresolvedRelation":
            self._relation(node)
        elif simple == "UnresolvedTableValuedFunction":
            parts = [str(part) for part in _seq(node.name())]
            if len(parts) != 1 or parts[0].lower() not in TABLE_FUNCTIONS:
                raise QueryRefused(f"the table function {_quoted(parts)} is not allowed (only "
                                   f"{', '.join(sorted(TABLE_FUNCTIONS))})")
        elif simple == "WithWindowDefinition":  # its window specs are map values, not among expressions()
            for spec in dict(self.jvm.scala.jdk.javaapi.CollectionConverters.asJava(node.windowDefinitions())).values():
                self.expression(spec)
        _visit_parts(node, self.logical_plan, self.plan, self.expression)

    def _relation(self, node: Any) -> None:
        """A plain name goes on: a view or CTE of the query, or a name Spark's analyser reports as not found (and
        `check_analyzed` refuses whatever else it might resolve to). A qualified one (`text`.`/path`, `db`.`t`,
        `global_temp`.`v`) names a file, a table or a catalog: never a view of the job."""
        parts = [str(part) for part in _seq(node.multipartIdentifier())]
        if len(parts) != 1:
            views = ", ".join(self.views) or "none"
            raise QueryRefused(f"{_quoted(parts)} is not one of the job's views ({views}): files, tables and "
                               "other data sources cannot be read")
        if node.isStreaming() or not node.options().isEmpty():
            raise QueryRefused(f"options on `{parts[0]}` are not allowed")

    def expression(self, node: Any) -> None:
        name = node.getClass().getName()
        simple = name.rsplit(".", 1)[-1]
        if name in FORBIDDEN_EXPRESSIONS:
            raise QueryRefused(f"{simple} is not allowed (Java reflection)")
        if name.startswith(_ANALYSIS):
            if name not in UNRESOLVED_EXPRESSIONS:
                raise QueryRefused(f"{_label(name)} is not allowed in a query")
        elif not name.startswith(_EXPRESSIONS):
            raise QueryRefused(f"{_label(name)} is not allowed in a query")
        if simple == "UnresolvedFunction":
            self._function([str(part) for part in _seq(node.nameParts())])
        elif simple == "UnresolvedGenerator":
            identifier = node.name()
            database = identifier.database()
            self._function(([str(database.get())] if database.isDefined() else []) + [str(identifier.funcName())])
        if self.plan_expression.isInstance(node):
            self.plan(node.plan())
        for child in _seq(node.children()):
            self.expression(child)

    def _function(self, parts: list[str]) -> None:
        if len(parts) != 1:
            raise QueryRefused(f"the function {_quoted(parts)} is not allowed: call built-in functions by their "
                               "plain name")
        function = parts[0].lower()
        if function in FORBIDDEN_FUNCTIONS:
            raise QueryRefused(f"the function `{function}` is not allowed ({FORBIDDEN_FUNCTIONS[function]})")
        if not self.builtin.functionExists(self.identifier.apply(function)):
            raise QueryRefused(f"`{function}` is not one of Spark's built-in functions")


def split_statements(sql: str) -> list[str]:
    """Statements separated by ``;`` outside quotes and comments (for messages and the cheap pre-check only:
    the parser decides)."""
    statements, current, quote, i = [], [], None, 0
    while i < len(sql):
        char = sql[i]
        if quote:
            current.append(char)
            if char == "\\" and i + 1 < len(sql):
                current.append(sql[i + 1])
                i += 1
            elif char == quote:
                quote = None
        elif char in ("'", '"', "`"):
            quote = char
            current.append(char)
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
            continue
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = len(sql) if end < 0 else end + 2
            current.append(" ")
            continue
        elif char == ";":
            statements.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    statements.append("".join(current))
    return [statement.strip() for statement in statements if statement.strip()]


def lock_session(spark: SparkSession) -> None:
    """The session settings a checked query runs under (SESSION_CONF)."""
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)


def check_query(spark: SparkSession, sql: str, views: Iterable[str], *, time_travel: bool = False) -> None:
    """Raises QueryRefused unless ``sql`` is one read-only query over ``views``; runs nothing. ``time_travel``:
    ``VERSION AS OF``/``TIMESTAMP AS OF`` on a plain name is allowed (`check_analyzed` then decides what it read)."""
    if "${" in sql and spark.conf.get("spark.sql.variable.substitute") != "false":
        raise QueryRefused("variable substitution (${…}) is not allowed")
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import convert_exception

    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
    except Exception as error:  # pyspark's ParseException, or the raw Py4JJavaError outside pyspark's handler
        count = len(split_statements(sql))
        if count > 1:
            raise QueryRefused(f"the text holds {count} statements separated by `;`") from None
        if isinstance(error, Py4JJavaError):
            raise convert_exception(error.java_exception) from None
        raise
    _PlanWalker(spark, views, time_travel=time_travel).plan(plan)


def check_analyzed(frame: DataFrame, views: Iterable[str], tables: Iterable[str] = ()) -> None:
    """The analysed query once more: no command, and no relation but the job's views (their insides are ours) and
    its ``tables`` (names of the session catalog's default database the job registered)."""
    walker = _AnalyzedWalker(frame.sparkSession, views, tables)
    walker.plan(frame._jdf.queryExecution().analyzed())


class _AnalyzedWalker:
    LEAVES = frozenset(_LOGICAL + name for name in ("OneRowRelation", "LocalRelation", "Range", "CTERelationRef",
                                                         "UnionLoopRef"))

    def __init__(self, spark: SparkSession, views: Iterable[str], tables: Iterable[str] = ()):
        jvm = spark._jvm
        self.views = {name.lower() for name in views}
        self.tables = {name.lower() for name in tables}
        self.command = jvm.java.lang.Class.forName(_LOGICAL + "Command")
        self.logical_plan = jvm.java.lang.Class.forName(_LOGICAL + "LogicalPlan")
        self.plan_expression = jvm.java.lang.Class.forName(_EXPRESSIONS + "PlanExpression")

    def plan(self, node: Any) -> None:
        name = node.getClass().getName()
        if self.command.isInstance(node):
            raise QueryRefused(f"{_label(name)} is a command")
        if name == _LOGICAL + "View":
            table = str(node.desc().identifier().table()).lower()
            if not node.isTempView() or table not in self.views:
                raise QueryRefused(f"`{table}` is not one of the job's views")
            return  # a view of the job: built by the template, it reads its topics
        if self._job_table(node):
            return  # a table of the job, at the version asked for
        if node.children().isEmpty() and name not in self.LEAVES:
            raise QueryRefused(f"{_label(name)} is not one of the job's views")
        _visit_parts(node, self.logical_plan, self.plan, self.expression)

    def _job_table(self, node: Any) -> bool:
        """A file relation of a table the job registered under its plain name in the default database."""
        if not self.tables or node.getClass().getName() != LOGICAL_RELATION or node.catalogTable().isEmpty():
            return False
        identifier = node.catalogTable().get().identifier()
        database = str(identifier.database().get()) if identifier.database().isDefined() else "default"
        return database == "default" and str(identifier.table()).lower() in self.tables

    def expression(self, node: Any) -> None:
        name = node.getClass().getName()
        if name in FORBIDDEN_EXPRESSIONS:
            raise QueryRefused(f"{name.rsplit('.', 1)[-1]} is not allowed (Java reflection)")
        if self.plan_expression.isInstance(node):
            self.plan(node.plan())
        for child in _seq(node.children()):
            self.expression(child)
