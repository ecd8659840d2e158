-- Issue 24, goal 1: the engine's work on the sink's nmon inserts (sql/033's two views), measured by
-- inserting the Avro of a 42 MB AIX nmon file (7,480 snapshots, 114 MB; medians of 3, CPU-bound):
-- - the check both views make on every row (a row's entities and metrics are one name or one per
--   value, else the whole insert fails and the sink dead-letters the message) ran a lambda over the
--   rows' tuples: 0.18 s per view (a view doing only the check: 0.81-0.83 s against 0.63-0.64 s
--   without it). The same check on the arrays' lengths costs 0.01-0.03 s.
-- - the split of a snapshot's sorted rows where the section changes compared each row with
--   `sorted[i - 1]` inside a lambda; a lambda's captured array is copied once per element (129
--   times per AIX snapshot). Each row's section is now compared with the previous one from a
--   shifted copy of the sections: 0.25 s less.
-- Both views: 2.52 s -> 2.05 s (three alternated runs of 3 each; the same nmon_sections and
-- nmon_labels rows, compared; a row with 2 entities for 3 values is still refused). The views change
-- in place (MODIFY QUERY): no insert passes between an old and a new view.
ALTER TABLE nmon_sections_from_snapshots MODIFY QUERY
SELECT host_id, section, ts, section_rows AS rows
FROM
(
    SELECT
        host_id,
        ts,
        tupleElement(g[1], 'section') AS section,
        arrayMap(r -> (r.entities, r.metrics, r.values), g) AS section_rows
    FROM
    (
        SELECT host_id, ts, arraySort(r -> r.section, rows) AS sorted
        FROM nmon_snapshots_in
        WHERE throwIf(NOT arrayAll((ne, nm, nv) -> (ne = 1 OR ne = nv) AND (nm = 1 OR nm = nv),
                arrayMap(x -> length(x), rows.entities), arrayMap(x -> length(x), rows.metrics),
                arrayMap(x -> length(x), rows.values)),
            'an nmon row whose entities or metrics are neither one name nor one per value') = 0
    )
    ARRAY JOIN arraySplit(
        (r, starts) -> starts,
        sorted,
        arrayMap((s, p, i) -> i = 1 OR s != p,
            arrayMap(r -> r.section, sorted),
            arrayPushFront(arrayPopBack(arrayMap(r -> r.section, sorted)), ''),
            arrayEnumerate(sorted))) AS g
);

ALTER TABLE nmon_labels_of_snapshots MODIFY QUERY
SELECT
    host_id,
    ts,
    r.section AS section,
    if(empty(r.entities), '', r.entities[1]) AS entity,
    l.1 AS label,
    l.2 AS text
FROM
(
    SELECT host_id, ts, arrayFilter(x -> notEmpty(x.labels), rows) AS labelled
    FROM nmon_snapshots_in
    WHERE throwIf(NOT arrayAll((ne, nm, nv) -> (ne = 1 OR ne = nv) AND (nm = 1 OR nm = nv),
            arrayMap(x -> length(x), rows.entities), arrayMap(x -> length(x), rows.metrics),
            arrayMap(x -> length(x), rows.values)),
        'an nmon row whose entities or metrics are neither one name nor one per value') = 0
)
ARRAY JOIN labelled AS r
ARRAY JOIN r.labels AS l;
