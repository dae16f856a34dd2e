-- 0005: the request rollup. Per class of API request (verb, group,
-- resource, subresource, scope, folded user, folded user agent): requests
-- per second, per-minute stats by code and latency bucket, and the raw users
-- behind each class per minute. The batch writer keeps these tables in the
-- transaction that writes the records; this migration fills them from the
-- records already held, by the same rules (see SCHEMA.md, "Request
-- rollup"). The rules are also written in Go (timeline/request.go,
-- timeline/sqlite/rollup.go); the tests hold the two to the same answers.

-- Latency buckets: 24 per decade from 100 µs (timeline.LatencyBucket).
-- Bucket b holds latencies in (upper of b-1, upper_ns]; the bucket after
-- the last row holds everything longer.
CREATE TABLE req_bucket (
    b        INTEGER PRIMARY KEY,
    upper_ns INTEGER NOT NULL UNIQUE
);
INSERT INTO req_bucket (b, upper_ns) VALUES
    (0, 100000), (1, 110069), (2, 121152), (3, 133352), (4, 146779), (5, 161559),
    (6, 177827), (7, 195734), (8, 215443), (9, 237137), (10, 261015), (11, 287298),
    (12, 316227), (13, 348070), (14, 383118), (15, 421696), (16, 464158), (17, 510896),
    (18, 562341), (19, 618965), (20, 681292), (21, 749894), (22, 825404), (23, 908517),
    (24, 1000000), (25, 1100694), (26, 1211527), (27, 1333521), (28, 1467799), (29, 1615598),
    (30, 1778279), (31, 1957341), (32, 2154434), (33, 2371373), (34, 2610157), (35, 2872984),
    (36, 3162277), (37, 3480700), (38, 3831186), (39, 4216965), (40, 4641588), (41, 5108969),
    (42, 5623413), (43, 6189658), (44, 6812920), (45, 7498942), (46, 8254041), (47, 9085175),
    (48, 10000000), (49, 11006941), (50, 12115276), (51, 13335214), (52, 14677992), (53, 16155980),
    (54, 17782794), (55, 19573417), (56, 21544346), (57, 23713737), (58, 26101572), (59, 28729848),
    (60, 31622776), (61, 34807005), (62, 38311868), (63, 42169650), (64, 46415888), (65, 51089697),
    (66, 56234132), (67, 61896581), (68, 68129206), (69, 74989420), (70, 82540418), (71, 90851757),
    (72, 100000000), (73, 110069417), (74, 121152765), (75, 133352143), (76, 146779926), (77, 161559809),
    (78, 177827941), (79, 195734178), (80, 215443469), (81, 237137370), (82, 261015721), (83, 287298483),
    (84, 316227766), (85, 348070058), (86, 383118684), (87, 421696503), (88, 464158883), (89, 510896977),
    (90, 562341325), (91, 618965818), (92, 681292069), (93, 749894209), (94, 825404185), (95, 908517575),
    (96, 1000000000), (97, 1100694171), (98, 1211527658), (99, 1333521432), (100, 1467799267), (101, 1615598098),
    (102, 1778279410), (103, 1957341781), (104, 2154434690), (105, 2371373705), (106, 2610157215), (107, 2872984833),
    (108, 3162277660), (109, 3480700588), (110, 3831186849), (111, 4216965034), (112, 4641588833), (113, 5108969774),
    (114, 5623413251), (115, 6189658188), (116, 6812920690), (117, 7498942093), (118, 8254041852), (119, 9085175756),
    (120, 10000000000), (121, 11006941712), (122, 12115276586), (123, 13335214321), (124, 14677992676), (125, 16155980984),
    (126, 17782794100), (127, 19573417814), (128, 21544346900), (129, 23713737056), (130, 26101572156), (131, 28729848333),
    (132, 31622776601), (133, 34807005884), (134, 38311868495), (135, 42169650342), (136, 46415888336), (137, 51089697745),
    (138, 56234132519), (139, 61896581889), (140, 68129206905), (141, 74989420933), (142, 82540418526), (143, 90851757565),
    (144, 100000000000), (145, 110069417125), (146, 121152765862), (147, 133352143216), (148, 146779926762), (149, 161559809843),
    (150, 177827941003), (151, 195734178148), (152, 215443469003), (153, 237137370566), (154, 261015721568), (155, 287298483335),
    (156, 316227766016), (157, 348070058842), (158, 383118684955), (159, 421696503428), (160, 464158883361), (161, 510896977450),
    (162, 562341325190), (163, 618965818891), (164, 681292069057), (165, 749894209332), (166, 825404185268), (167, 908517575651),
    (168, 1000000000000), (169, 1100694171252), (170, 1211527658628), (171, 1333521432163), (172, 1467799267622), (173, 1615598098439),
    (174, 1778279410038), (175, 1957341781487), (176, 2154434690031), (177, 2371373705661), (178, 2610157215682), (179, 2872984833353),
    (180, 3162277660168), (181, 3480700588428), (182, 3831186849557);

-- A class of requests. verb .. user_agent are ids into strs; user and
-- user_agent are folded (timeline.FoldUser, timeline.FoldUserAgent).
CREATE TABLE req_class (
    id          INTEGER PRIMARY KEY,
    verb        INTEGER NOT NULL,
    api_group   INTEGER NOT NULL,
    resource    INTEGER NOT NULL,
    subresource INTEGER NOT NULL,
    scope       TEXT    NOT NULL CHECK (scope IN ('cluster', 'namespace', 'object')),
    user        INTEGER NOT NULL,
    user_agent  INTEGER NOT NULL,
    UNIQUE (verb, api_group, resource, subresource, scope, user, user_agent)
);

-- Requests of a class received in one second (Unix seconds).
CREATE TABLE req_second (
    class INTEGER NOT NULL,
    sec   INTEGER NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (class, sec)
) WITHOUT ROWID;

-- Completed requests of a class received in one minute (Unix seconds, a
-- multiple of 60) with one code and one latency bucket.
CREATE TABLE req_stat (
    minute        INTEGER NOT NULL,
    class         INTEGER NOT NULL,
    code          INTEGER NOT NULL,
    bucket        INTEGER NOT NULL,
    n             INTEGER NOT NULL,
    etcd_lists    INTEGER NOT NULL,
    unpaged_lists INTEGER NOT NULL,
    lat_sum       INTEGER NOT NULL,  -- ns
    lat_max       INTEGER NOT NULL,  -- ns
    apf_wait_max  INTEGER NOT NULL,  -- ns
    PRIMARY KEY (minute, class, code, bucket)
) WITHOUT ROWID;

-- Requests of a class received in one minute, per raw user (strs id).
CREATE TABLE req_client (
    minute INTEGER NOT NULL,
    class  INTEGER NOT NULL,
    user   INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (minute, class, user)
) WITHOUT ROWID;

-- Backfill. One pass over record picks the counted requests: audit
-- records with a resource and a response stage (2 | 4 | 8).
CREATE TEMP TABLE req_src AS
WITH a AS (
    SELECT r.time_ns, r.stages, r.code, r.latency_ns, r.verb, r.api_group, r.resource, r.subresource,
        CASE WHEN r.name != 0 THEN 'object' WHEN r.namespace != 0 THEN 'namespace' ELSE 'cluster' END AS scope,
        r.user, r.user_agent,
        COALESCE(r.verb = (SELECT id FROM strs WHERE s = 'list'), 0) AS is_list,
        '&' || CASE WHEN instr(r.uri, '?') > 0 THEN substr(r.uri, instr(r.uri, '?') + 1) ELSE '' END || '&' AS q,
        CASE WHEN r.extra IS NOT NULL AND json_valid(r.extra)
            THEN json_extract(r.extra, '$.annotations."apiserver.latency.k8s.io/apf-queue-wait"') END AS apf
    FROM record r
    WHERE r.source = (SELECT id FROM strs WHERE s = 'audit') AND r.resource != 0 AND (r.stages & 14) != 0
), b AS ( -- the rest of the query from each parameter's value on
    SELECT a.*,
        CASE WHEN instr(q, '&continue=') > 0 THEN substr(q, instr(q, '&continue=') + 10) ELSE '&' END AS cont_t,
        CASE WHEN instr(q, '&resourceVersionMatch=') > 0 THEN substr(q, instr(q, '&resourceVersionMatch=') + 22) ELSE '&' END AS rvm_t,
        CASE WHEN instr(q, '&resourceVersion=') > 0 THEN substr(q, instr(q, '&resourceVersion=') + 17) ELSE '&' END AS rv_t,
        CASE WHEN instr(q, '&limit=') > 0 THEN substr(q, instr(q, '&limit=') + 7) ELSE '&' END AS limit_t,
        -- the APF queue wait as Go's Duration.String writes it: [Hh][Mm]S.Fs, or N.F(ms|µs|us|ns)
        CASE WHEN apf GLOB '*s' AND NOT apf GLOB '*[mµun]s' THEN
            substr(apf, instr(apf, 'h') + 1) END AS apf_s
    FROM a
), c AS ( -- parameter values
    SELECT b.*,
        substr(cont_t, 1, instr(cont_t, '&') - 1) AS cont,
        substr(rvm_t, 1, instr(rvm_t, '&') - 1) AS rvm,
        substr(rv_t, 1, instr(rv_t, '&') - 1) AS rv,
        ltrim(substr(limit_t, 1, instr(limit_t, '&') - 1), '0') GLOB '[1-9]*' AS has_limit
    FROM b
)
SELECT time_ns / 1000000000 AS sec, stages, code, latency_ns, verb, api_group, resource, subresource, scope, user, user_agent,
    is_list AND CASE WHEN cont != '' THEN 1 WHEN rvm = 'Exact' THEN 1 WHEN rvm = 'NotOlderThan' THEN 0
        WHEN rv = '' THEN 1 WHEN rv = '0' THEN 0 ELSE has_limit END AS etcd,
    is_list AND scope = 'cluster' AND NOT has_limit AS unpaged,
    CAST(CASE
        WHEN apf IS NULL OR typeof(apf) != 'text' THEN 0
        WHEN apf GLOB '*ms' THEN round(CAST(substr(apf, 1, length(apf) - 2) AS REAL) * 1e6)
        WHEN apf GLOB '*µs' OR apf GLOB '*us' THEN round(CAST(substr(apf, 1, length(apf) - 2) AS REAL) * 1e3)
        WHEN apf GLOB '*ns' THEN round(CAST(substr(apf, 1, length(apf) - 2) AS REAL))
        WHEN apf_s IS NOT NULL THEN
            CASE WHEN instr(apf, 'h') > 0 THEN CAST(substr(apf, 1, instr(apf, 'h') - 1) AS INTEGER) * 3600000000000 ELSE 0 END +
            CASE WHEN instr(apf_s, 'm') > 0 THEN CAST(substr(apf_s, 1, instr(apf_s, 'm') - 1) AS INTEGER) * 60000000000 ELSE 0 END +
            round(CAST(substr(apf_s, instr(apf_s, 'm') + 1, length(apf_s) - instr(apf_s, 'm') - 1) AS REAL) * 1e9)
        ELSE 0 END AS INTEGER) AS apf
FROM c;

-- Folded users and user agents, interned.
CREATE TEMP TABLE req_fold_user AS
SELECT id, CASE
        WHEN substr(s, 1, 12) = 'system:node:' THEN 'system:node:*'
        WHEN substr(s, 1, 22) = 'system:serviceaccount:' AND instr(substr(s, 23), ':') > 0
            THEN 'system:serviceaccount:' || substr(s, 23, instr(substr(s, 23), ':')) || '*'
        ELSE s END AS f
FROM strs WHERE id IN (SELECT DISTINCT user FROM req_src);
CREATE TEMP TABLE req_fold_ua AS
SELECT id, CASE
        WHEN instr(s, '/') = 0 AND instr(s, ' ') = 0 THEN s
        WHEN instr(s, '/') = 0 THEN substr(s, 1, instr(s, ' ') - 1)
        WHEN instr(s, ' ') = 0 THEN substr(s, 1, instr(s, '/') - 1)
        ELSE substr(s, 1, min(instr(s, '/'), instr(s, ' ')) - 1) END AS f
FROM strs WHERE id IN (SELECT DISTINCT user_agent FROM req_src);
INSERT INTO strs (s) SELECT f FROM (SELECT f FROM req_fold_user UNION SELECT f FROM req_fold_ua) WHERE true
    ON CONFLICT (s) DO NOTHING;
CREATE TEMP TABLE req_fu AS SELECT u.id, s.id AS f FROM req_fold_user u JOIN strs s ON s.s = u.f;
CREATE TEMP TABLE req_fa AS SELECT a.id, s.id AS f FROM req_fold_ua a JOIN strs s ON s.s = a.f;
CREATE UNIQUE INDEX temp.req_fu_id ON req_fu (id);
CREATE UNIQUE INDEX temp.req_fa_id ON req_fa (id);

INSERT INTO req_class (verb, api_group, resource, subresource, scope, user, user_agent)
SELECT DISTINCT r.verb, r.api_group, r.resource, r.subresource, r.scope, fu.f, fa.f
FROM req_src r JOIN req_fu fu ON fu.id = r.user JOIN req_fa fa ON fa.id = r.user_agent
ORDER BY 1, 2, 3, 4, 5, 6, 7;

CREATE TEMP TABLE req_cls AS
SELECT c.id AS class, r.sec, r.sec / 60 * 60 AS minute, r.user, r.stages, r.code, r.latency_ns,
    COALESCE((SELECT k.b FROM req_bucket k WHERE k.upper_ns >= r.latency_ns ORDER BY k.upper_ns LIMIT 1),
        (SELECT max(b) + 1 FROM req_bucket)) AS bucket,
    r.etcd, r.unpaged, r.apf
FROM req_src r JOIN req_fu fu ON fu.id = r.user JOIN req_fa fa ON fa.id = r.user_agent
JOIN req_class c ON c.verb = r.verb AND c.api_group = r.api_group AND c.resource = r.resource
    AND c.subresource = r.subresource AND c.scope = r.scope AND c.user = fu.f AND c.user_agent = fa.f;

INSERT INTO req_second (class, sec, n)
SELECT class, sec, count(*) FROM req_cls GROUP BY class, sec;
INSERT INTO req_client (minute, class, user, n)
SELECT minute, class, user, count(*) FROM req_cls GROUP BY minute, class, user;
INSERT INTO req_stat (minute, class, code, bucket, n, etcd_lists, unpaged_lists, lat_sum, lat_max, apf_wait_max)
SELECT minute, class, code, bucket, count(*), sum(etcd), sum(unpaged), sum(latency_ns), max(latency_ns), max(apf)
FROM req_cls WHERE (stages & 12) != 0 GROUP BY minute, class, code, bucket;

DROP TABLE req_src;
DROP TABLE req_fold_user;
DROP TABLE req_fold_ua;
DROP TABLE req_fu;
DROP TABLE req_fa;
DROP TABLE req_cls;
