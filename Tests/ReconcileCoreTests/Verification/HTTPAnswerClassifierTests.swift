import Foundation
import Testing
@testable import ReconcileCore

@Suite("HTTP answers: header lookup and the declared content type")
struct HTTPAnswerClassifierTests {
    func response(_ headers: [HTTPHeader]) -> HTTPResponse {
        HTTPResponse(status: 200, headers: headers, body: [])
    }

    @Test("a header is found whatever the case of its name, and only by its whole name")
    func headerLookup() {
        let answer = response([HTTPHeader("content-type", "text/plain"), HTTPHeader("Retry-After", "5"), HTTPHeader("x-retry", "no")])
        #expect(answer.header("Content-Type") == "text/plain" && answer.header("CONTENT-TYPE") == "text/plain")
        #expect(answer.header("retry-after") == "5" && answer.header("Retry") == nil && answer.header("content-typ") == nil)
        #expect(!HTTPResponse.namesMatch("é", "É") && HTTPResponse.namesMatch("X-Ab_9", "x-aB_9"))
    }

    @Test("JSON is declared by application/json, text/json or application/*+json, with parameters, spaces and any case; another type or none said otherwise")
    func declaredJSON() {
        let json = ["application/json", "Application/JSON", " application/json ; charset=utf-8", "text/json", "application/problem+json",
                    "application/+json", "APPLICATION/VND.API+JSON;x=y", "\tapplication/json\t"]
        for type in json { #expect(HTTPAnswerClassifier.declaresJSON(response([HTTPHeader("Content-Type", type)])), "\(type)") }
        let other = ["text/html", "application/jsonp", "application/json5", "text/json+x", "application/xml", "", ";application/json", "json",
                     "application/+jso", "xapplication/json"]
        for type in other { #expect(!HTTPAnswerClassifier.declaresJSON(response([HTTPHeader("Content-Type", type)])), "\(type)") }
        #expect(HTTPAnswerClassifier.declaresJSON(response([])), "no content type: the body decides")
    }
}
