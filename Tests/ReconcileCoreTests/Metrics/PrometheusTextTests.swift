import Testing
import TestSupport

/// The tests' own reader of the format (`TestSupport/PrometheusText.swift`) must refuse what
/// Prometheus refuses, or the metrics tests would prove nothing.
@Suite("Metrics: the strict test parser")
struct PrometheusTextTests {
    static let head = "# HELP m A metric.\n# TYPE m gauge\n"
    static let histogramHead = "# HELP h A histogram.\n# TYPE h histogram\n"

    @Test("it reads what the format allows: comments, blank lines, spaces, a trailing comma, every float spelling")
    func accepts() throws {
        let text = """
            # a comment
            # HELP m A metric.
            # TYPE m gauge

            m{a="1",b="x y",} 1.5e3
            m{a="2"}\t-0.25
            m{a="3"} +Inf
            m{a="4"} NaN
            m .5

            """
        let parsed = try PrometheusText(parsing: text)
        #expect(parsed.value("m", ["a": "1", "b": "x y"]) == 1500)
        #expect(parsed.value("m", ["a": "2"]) == -0.25)
        #expect(parsed.value("m", ["a": "3"]) == .infinity)
        #expect(parsed.value("m") == 0.5)
        #expect(parsed.samples.count == 5)
    }

    @Test(
        "it refuses what Prometheus or the textfile collector would",
        arguments: [
            ("no final line feed", head + "m 1"),
            ("bad metric name", head + "9m 1\n"),
            ("bad metric name character", "# HELP m-x A.\n# TYPE m-x gauge\nm-x 1\n"),
            ("bad label name", head + "m{9a=\"x\"} 1\n"),
            ("reserved label name", head + "m{__name__=\"x\"} 1\n"),
            ("label twice", head + "m{a=\"1\",a=\"2\"} 1\n"),
            ("unquoted label value", head + "m{a=1} 1\n"),
            ("invalid escape", head + "m{a=\"\\t\"} 1\n"),
            ("unterminated labels", head + "m{a=\"1\" 1\n"),
            ("not a float", head + "m one\n"),
            ("Go-only float spelling", head + "m inf\n"),
            ("hex float", head + "m 0x10\n"),
            ("time stamp", head + "m 1 1700000000000\n"),
            ("no value", head + "m\n"),
            ("HELP twice", head + "# HELP m Again.\nm 1\n"),
            ("TYPE twice", head + "# TYPE m counter\nm 1\n"),
            ("TYPE after samples", "# HELP m A.\nm 1\n# TYPE m gauge\n"),
            ("unknown type", "# HELP m A.\n# TYPE m meter\nm 1\n"),
            ("missing HELP", "# TYPE m gauge\nm 1\n"),
            ("missing TYPE", "# HELP m A.\nm 1\n"),
            ("not one group", head + "m{a=\"1\"} 1\n# HELP n N.\n# TYPE n gauge\nn 1\nm{a=\"2\"} 1\n"),
            ("duplicate series", head + "m{a=\"1\",b=\"2\"} 1\nm{b=\"2\",a=\"1\"} 2\n"),
            ("negative counter", "# HELP c_total C.\n# TYPE c_total counter\nc_total -1\n"),
            ("histogram without +Inf", histogramHead + "h_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n"),
            ("histogram counts decrease", histogramHead + "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"),
            ("histogram bounds out of order", histogramHead + "h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"),
            ("histogram count unlike +Inf", histogramHead + "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n"),
            ("histogram without sum", histogramHead + "h_bucket{le=\"+Inf\"} 1\nh_count 1\n"),
            ("histogram bucket without le", histogramHead + "h_bucket 1\nh_sum 1\nh_count 1\n"),
            ("histogram bare sample", histogramHead + "h 1\n"),
        ])
    func refuses(what: String, text: String) {
        #expect(throws: PrometheusText.Problem.self, "\(what)") { try PrometheusText(parsing: text) }
    }

    @Test("a well-formed histogram passes, its samples in one group")
    func histogram() throws {
        let parsed = try PrometheusText(parsing: Self.histogramHead + """
            h_bucket{e="a",le="0.5"} 1
            h_bucket{e="a",le="+Inf"} 2
            h_sum{e="a"} 3.5
            h_count{e="a"} 2

            """)
        #expect(parsed.family("h")?.samples.count == 4)
        #expect(parsed.value("h_count", ["e": "a"]) == 2)
    }
}
