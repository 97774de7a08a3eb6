import Foundation

/// The middle value of `values` (the mean of the two middle ones for an even count), or nil when empty.
public func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// Formats with thousands separators; `decimals` digits after the point.
public func formatNumber(_ value: Double, decimals: Int = 0) -> String {
    let negative = value < 0
    var scaled = (abs(value) * pow(10, Double(decimals))).rounded()
    if !scaled.isFinite { scaled = 0 }
    let whole = Int(scaled) / Int(pow(10, Double(decimals)))
    var digits = String(whole)
    var grouped = ""
    while digits.count > 3 {
        grouped = "," + digits.suffix(3) + grouped
        digits.removeLast(3)
    }
    grouped = digits + grouped
    if decimals > 0 {
        let fraction = Int(scaled) % Int(pow(10, Double(decimals)))
        var f = String(fraction)
        while f.count < decimals { f = "0" + f }
        grouped += "." + f
    }
    return (negative && scaled != 0 ? "-" : "") + grouped
}
