import Foundation

/// Draws the load test's two charts into one SVG.
///
/// Latency over time (p50, p99, max per second, warm-up shaded) and the latency distribution per operation
/// (latency against percentile, on a "number of nines" axis so the tail is as wide as the body). Both latency
/// axes are logarithmic.
struct LoadtestChart {
    var timeline: [LatencyHistogram]
    var warmupSeconds: Int
    var histograms: [(name: String, histogram: LatencyHistogram)]

    private static let panelWidth = 520.0
    private static let panelHeight = 320.0
    private static let margin = (left: 60.0, top: 40.0, right: 20.0, bottom: 40.0)
    private static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]

    /// Everything plotted is between these, in microseconds (log scale).
    private var latencyRange: (low: Double, high: Double) {
        var high = 1.0
        for second in timeline { high = max(high, Double(second.maximum)) }
        for (_, histogram) in histograms { high = max(high, Double(histogram.maximum)) }
        return (10, max(high * 1.2, 100))
    }

    func svg() -> String {
        let width = Self.panelWidth * 2
        var body = ""
        body += timePanel(originX: 0)
        body += distributionPanel(originX: Self.panelWidth)
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(Self.panelHeight))" \
            font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            \(body)</svg>

            """
    }

    // MARK: - Panels

    private func timePanel(originX: Double) -> String {
        let seconds = max(timeline.count, 1)
        var out = frame(originX: originX, title: "Latency over time (per second)", xLabel: "seconds")
        let plot = plotArea(originX: originX)
        if warmupSeconds > 0 {
            let warmupWidth = plot.width * Double(min(warmupSeconds, seconds)) / Double(seconds)
            out +=
                "<rect x=\"\(f(plot.x))\" y=\"\(f(plot.y))\" width=\"\(f(warmupWidth))\" height=\"\(f(plot.height))\" "
            out += "fill=\"#eeeeee\"/><text x=\"\(f(plot.x + 4))\" y=\"\(f(plot.y + 12))\">warm-up</text>\n"
        }
        let series: [(String, (LatencyHistogram) -> UInt64)] = [
            ("p50", { $0.value(atQuantile: 0.5) }), ("p99", { $0.value(atQuantile: 0.99) }), ("max", { $0.maximum }),
        ]
        for (number, (name, value)) in series.enumerated() {
            let points = timeline.enumerated().compactMap { second, histogram -> (Double, Double)? in
                guard histogram.total > 0 else { return nil }
                let x = plot.x + plot.width * (Double(second) + 0.5) / Double(seconds)
                return (x, y(Double(value(histogram)), plot: plot))
            }
            out += polyline(points, color: Self.colors[number])
            out += legend(name, number: number, plot: plot)
        }
        for second in stride(from: 0, through: seconds, by: max(1, seconds / 10)) {
            let x = plot.x + plot.width * Double(second) / Double(seconds)
            out += "<text x=\"\(f(x))\" y=\"\(f(plot.y + plot.height + 14))\" text-anchor=\"middle\">\(second)</text>\n"
        }
        return out + latencyTicks(plot: plot)
    }

    private func distributionPanel(originX: Double) -> String {
        var out = frame(originX: originX, title: "Latency distribution", xLabel: "percentile")
        let plot = plotArea(originX: originX)
        let maximumNines = 4.0
        for (number, (name, histogram)) in histograms.enumerated() where histogram.total > 0 {
            let points = stride(from: 0.0, through: maximumNines, by: 0.05).map { nines -> (Double, Double) in
                let quantile = 1 - pow(10, -nines)
                let x = plot.x + plot.width * nines / maximumNines
                return (x, y(Double(histogram.value(atQuantile: quantile)), plot: plot))
            }
            out += polyline(points, color: Self.colors[number % Self.colors.count])
            out += legend(name, number: number, plot: plot)
        }
        for (nines, label) in [(0.0, "0"), (1.0, "90"), (2.0, "99"), (3.0, "99.9"), (4.0, "99.99")] {
            let x = plot.x + plot.width * nines / maximumNines
            out += "<text x=\"\(f(x))\" y=\"\(f(plot.y + plot.height + 14))\" text-anchor=\"middle\">\(label)</text>\n"
        }
        return out + latencyTicks(plot: plot)
    }

    // MARK: - Drawing

    private struct Plot {
        var x: Double
        var y: Double
        var width: Double
        var height: Double
    }

    private func plotArea(originX: Double) -> Plot {
        Plot(
            x: originX + Self.margin.left, y: Self.margin.top,
            width: Self.panelWidth - Self.margin.left - Self.margin.right,
            height: Self.panelHeight - Self.margin.top - Self.margin.bottom)
    }

    private func frame(originX: Double, title: String, xLabel: String) -> String {
        let plot = plotArea(originX: originX)
        return """
            <text x="\(f(plot.x + plot.width / 2))" y="20" text-anchor="middle" font-size="13">\(title)</text>
            <rect x="\(f(plot.x))" y="\(f(plot.y))" width="\(f(plot.width))" height="\(f(plot.height))" \
            fill="none" stroke="#888"/>
            <text x="\(f(plot.x + plot.width / 2))" y="\(f(Self.panelHeight - 6))" text-anchor="middle">\(xLabel)</text>
            <text x="\(f(originX + 14))" y="\(f(plot.y + plot.height / 2))" text-anchor="middle" \
            transform="rotate(-90 \(f(originX + 14)) \(f(plot.y + plot.height / 2)))">latency (ms)</text>

            """
    }

    private func latencyTicks(plot: Plot) -> String {
        var out = ""
        var tick = 10.0
        while tick <= latencyRange.high {
            let tickY = y(tick, plot: plot)
            out += "<line x1=\"\(f(plot.x))\" x2=\"\(f(plot.x + plot.width))\" y1=\"\(f(tickY))\" y2=\"\(f(tickY))\" "
            out += "stroke=\"#ddd\"/><text x=\"\(f(plot.x - 4))\" y=\"\(f(tickY + 4))\" text-anchor=\"end\">"
            out += "\(Self.label(milliseconds: tick / 1000))</text>\n"
            tick *= 10
        }
        return out
    }

    private func polyline(_ points: [(Double, Double)], color: String) -> String {
        guard !points.isEmpty else { return "" }
        let coordinates = points.map { "\(f($0.0)),\(f($0.1))" }.joined(separator: " ")
        return "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\" points=\"\(coordinates)\"/>\n"
    }

    private func legend(_ name: String, number: Int, plot: Plot) -> String {
        let legendY = plot.y + 14 + Double(number) * 14
        let legendX = plot.x + plot.width - 80
        return "<line x1=\"\(f(legendX))\" x2=\"\(f(legendX + 16))\" y1=\"\(f(legendY - 4))\" y2=\"\(f(legendY - 4))\" "
            + "stroke=\"\(Self.colors[number % Self.colors.count])\" stroke-width=\"2\"/>"
            + "<text x=\"\(f(legendX + 20))\" y=\"\(f(legendY))\">\(name)</text>\n"
    }

    /// The y coordinate of a latency in microseconds, on the log scale.
    private func y(_ microseconds: Double, plot: Plot) -> Double {
        let range = latencyRange
        let clamped = min(max(microseconds, range.low), range.high)
        let fraction = (log10(clamped) - log10(range.low)) / (log10(range.high) - log10(range.low))
        return plot.y + plot.height * (1 - fraction)
    }

    private static func label(milliseconds: Double) -> String {
        milliseconds >= 1 ? String(Int(milliseconds)) : String(format: "%g", milliseconds)
    }

    private func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
