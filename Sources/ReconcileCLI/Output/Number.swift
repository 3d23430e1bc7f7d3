/// Numbers for people: `1,204`.
enum Number {
    static func grouped(_ value: Int) -> String {
        let digits = String(abs(value))
        var output = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 { output.append(",") }
            output.append(character)
        }
        return (value < 0 ? "-" : "") + String(output.reversed())
    }
}
