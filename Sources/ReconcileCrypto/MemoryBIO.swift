import CCrypto

/// An OpenSSL memory BIO, freed with its owner: a read-only one over a copy of some bytes, or an
/// empty one to write into.
final class MemoryBIO {
    let pointer: OpaquePointer
    // BIO_new_mem_buf does not copy: the bytes must outlive the BIO.
    private let storage: UnsafeMutableBufferPointer<UInt8>?

    /// A read-only BIO over a copy of `bytes`.
    init(reading bytes: some Collection<UInt8>) {
        let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        _ = storage.initialize(from: bytes)
        guard let bio = BIO_new_mem_buf(storage.baseAddress, Int32(bytes.count)) else {
            storage.deallocate()
            fatalError("BIO_new_mem_buf failed (out of memory)")
        }
        self.storage = storage
        pointer = bio
    }

    /// An empty BIO to write into.
    init() {
        guard let bio = BIO_new(BIO_s_mem()) else { fatalError("BIO_new(BIO_s_mem) failed (out of memory)") }
        storage = nil
        pointer = bio
    }

    deinit {
        BIO_free(pointer)
        storage?.deallocate()
    }

    /// What has been written so far.
    var contents: [UInt8] {
        var data: UnsafeMutablePointer<CChar>?
        let count = reconcile_bio_mem_data(pointer, &data)
        guard let data, count > 0 else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
    }
}
