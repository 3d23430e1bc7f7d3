import Testing
import TestSupport
@testable import ReconcileFoundation

@Suite("Metrics: Prometheus text exposition")
struct PrometheusExpositionTests {
    typealias Label = MetricFamily.Label

    @Test("HELP, TYPE, then the samples of each family, in the order given")
    func layout() throws {
        let text = PrometheusExposition.render([
            MetricFamily(name: "demo_up", help: "Whether it is up.", kind: .gauge, samples: [.number(1)]),
            MetricFamily(
                name: "demo_requests_total", help: "Requests.", kind: .counter,
                samples: [.number(3, [Label("code", "200"), Label("method", "post")]), .number(0, [Label("code", "500"), Label("method", "post")])]),
        ])
        #expect(text == """
            # HELP demo_up Whether it is up.
            # TYPE demo_up gauge
            demo_up 1
            # HELP demo_requests_total Requests.
            # TYPE demo_requests_total counter
            demo_requests_total{code="200",method="post"} 3
            demo_requests_total{code="500",method="post"} 0

            """)
        let parsed = try PrometheusText(parsing: text)
        #expect(parsed.value("demo_requests_total", ["code": "200", "method": "post"]) == 3)
        #expect(parsed.family("demo_requests_total")?.type == "counter")
    }

    @Test("label values escape backslash, double quote and line feed; HELP escapes backslash and line feed")
    func escaping() throws {
        let awkward = #"C:\path "quoted""# + "\nnext line, ünïcödé, {braces}, a=b"
        let text = PrometheusExposition.render([
            MetricFamily(
                name: "demo_info", help: "A \\ backslash\nand a \"quote\".", kind: .gauge, samples: [.number(1, [Label("value", awkward)])])
        ])
        #expect(text.contains(#"# HELP demo_info A \\ backslash\nand a "quote"."#))
        #expect(text.contains(#"demo_info{value="C:\\path \"quoted\"\nnext line, ünïcödé, {braces}, a=b"} 1"#))
        #expect(text.split(separator: "\n").count == 3)
        let parsed = try PrometheusText(parsing: text)
        #expect(parsed.family("demo_info")?.help == "A \\ backslash\nand a \"quote\".")
        #expect(parsed.value("demo_info", ["value": awkward]) == 1)
    }

    @Test(
        "numbers as Go's ParseFloat reads them: whole numbers bare, +Inf, -Inf, NaN, otherwise the shortest exact text",
        arguments: [
            (0.0, "0"), (-0.0, "0"), (12, "12"), (-3, "-3"), (0.005, "0.005"), (2.5, "2.5"), (1e-7, "1e-07"),
            (1_800_000_000.25, "1800000000.25"), (1e20, "1e+20"), (.infinity, "+Inf"), (-.infinity, "-Inf"), (.nan, "NaN"),
        ] as [(Double, String)])
    func numbers(value: Double, expected: String) throws {
        #expect(PrometheusExposition.format(value) == expected)
        let parsed = try PrometheusText(parsing: PrometheusExposition.render([
            MetricFamily(name: "demo_value", help: "A value.", kind: .gauge, samples: [.number(value)])
        ]))
        let read = try #require(parsed.value("demo_value"))
        #expect(read == value || (read.isNaN && value.isNaN))
    }

    @Test("a histogram: cumulative buckets with le (the labels first, +Inf last), then _sum and _count")
    func histogram() throws {
        var fast = LatencyHistogram(upperBounds: [0.1, 1])
        fast.record(seconds: 0.05)
        fast.record(seconds: 0.5)
        fast.record(seconds: 0.75)
        var slow = LatencyHistogram(upperBounds: [0.1, 1])
        slow.record(seconds: 4)
        let text = PrometheusExposition.render([
            MetricFamily(
                name: "demo_duration_seconds", help: "Durations.", kind: .histogram,
                samples: [MetricFamily.Sample([Label("endpoint", "a")], .histogram(fast)), MetricFamily.Sample([Label("endpoint", "b")], .histogram(slow))])
        ])
        #expect(text == """
            # HELP demo_duration_seconds Durations.
            # TYPE demo_duration_seconds histogram
            demo_duration_seconds_bucket{endpoint="a",le="0.1"} 1
            demo_duration_seconds_bucket{endpoint="a",le="1"} 3
            demo_duration_seconds_bucket{endpoint="a",le="+Inf"} 3
            demo_duration_seconds_sum{endpoint="a"} 1.3
            demo_duration_seconds_count{endpoint="a"} 3
            demo_duration_seconds_bucket{endpoint="b",le="0.1"} 0
            demo_duration_seconds_bucket{endpoint="b",le="1"} 0
            demo_duration_seconds_bucket{endpoint="b",le="+Inf"} 1
            demo_duration_seconds_sum{endpoint="b"} 4
            demo_duration_seconds_count{endpoint="b"} 1

            """)
        let parsed = try PrometheusText(parsing: text)
        #expect(parsed.samples("demo_duration_seconds_bucket", matching: ["endpoint": "a"]).map(\.value) == [1, 3, 3])
        #expect(parsed.value("demo_duration_seconds_count", ["endpoint": "b"]) == 1)
    }

    @Test("a family without samples is its HELP and TYPE lines only")
    func empty() throws {
        let text = PrometheusExposition.render([MetricFamily(name: "demo_last_seconds", help: "Nothing yet.", kind: .gauge, samples: [])])
        #expect(text == "# HELP demo_last_seconds Nothing yet.\n# TYPE demo_last_seconds gauge\n")
        #expect(try PrometheusText(parsing: text).samples.isEmpty)
        #expect(PrometheusExposition.render([]) == "")
    }

    @Test("metric and label names follow the format's rules")
    func names() {
        for good in ["a", "_a", "a:b", "reconciled_orders", "A9_:z"] { #expect(PrometheusExposition.isValidMetricName(good), "\(good)") }
        for bad in ["", "9a", "a-b", "a b", "ä", "a.b"] { #expect(!PrometheusExposition.isValidMetricName(bad), "\(bad)") }
        for good in ["a", "_a", "state", "le"] { #expect(PrometheusExposition.isValidLabelName(good), "\(good)") }
        for bad in ["", "a:b", "9a", "__name__", "a-b"] { #expect(!PrometheusExposition.isValidLabelName(bad), "\(bad)") }
    }
}
