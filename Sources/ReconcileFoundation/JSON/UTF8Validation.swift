/// UTF-8 well-formedness checks that report where a byte sequence goes wrong.
///
/// Follows the Unicode Standard's table of well-formed sequences (no overlong forms, no
/// surrogates, nothing above U+10FFFF).
public enum UTF8Validation {
    /// The result of checking one sequence.
    public enum SequenceCheck: Equatable {
        case valid(length: Int)
        case invalid
    }

    /// The offset of the first byte that is not part of well-formed UTF-8, or `nil` if all is well.
    public static func firstInvalidOffset(in bytes: some Collection<UInt8>) -> Int? {
        let array = Array(bytes)
        return array.withUnsafeBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                if buffer[index] < 0x80 {
                    index += 1
                    continue
                }
                switch sequenceLength(in: buffer, at: index) {
                case .valid(let length): index += length
                case .invalid: return index
                }
            }
            return nil
        }
    }

    /// Checks the sequence starting at `offset`, whose first byte is 0x80 or above.
    public static func sequenceLength(in bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> SequenceCheck {
        let lead = bytes[offset]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: return .invalid
        }
        guard bytes.count - offset >= length else { return .invalid }
        guard secondRange.contains(bytes[offset + 1]) else { return .invalid }
        for position in (offset + 2)..<(offset + length) where !(0x80...0xBF).contains(bytes[position]) {
            return .invalid
        }
        return .valid(length: length)
    }
}
