// Fuzz target: store notification files as the spool reads them (DESIGN §3, §5a) — the
// classification of a file, then NotificationFileReader's verification of an App Store
// notification and of the signed transaction inside it, a Google Play Pub/Sub push (taken in
// only as a record that changes no order), and a voidedpurchases.list answer. The invariant of
// issue 17: nothing unverified comes out — nor, issue 26, any purchase the phone never sent,
// whether a file or a Pub/Sub pull answer carries it, nor any order `recover` would make from a
// look-up answer (Look Up Order ID, orders.get). The reader trusts only the throwaway root below (made with openssl for
// this target; its leaf key was thrown away), so a notification comes out only for an input that
// holds, verbatim, one of the payloads that key signed (the seeds in Fuzz/Corpus/notification-file).
// Every refusal must name a check and never echo the payload.
import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileCrypto
import ReconcileSpool

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNotificationFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    NotificationFileTarget.run(inputBytes(data, size))
    return 0
}

enum NotificationFileTarget {
    static let now = Date(timeIntervalSince1970: 1_800_000_100)
    static let rootDER = Array(Data(base64Encoded: "MIIBnjCCAUSgAwIBAgIUeS6w8uiWHe7kGHaqbkxtsTkHkmUwCgYIKoZIzj0EAwIwLTEXMBUGA1UECgwOcmVjb25jaWxlIHRlc3QxEjAQBgNVBAMMCVRlc3QgUm9vdDAeFw0yNjEyMDExOTI5NDhaFw0zNjExMjgxOTI5NDhaMC0xFzAVBgNVBAoMDnJlY29uY2lsZSB0ZXN0MRIwEAYDVQQDDAlUZXN0IFJvb3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAS5ftMrnArFXWUPxKB7PbklDbne2Dr8jiK0ctUdMYwvTt6TqouSsucae2Y98ZEiO0wq/4Zn+vk1RnfaKm6snGjQo0IwQDAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIBBjAdBgNVHQ4EFgQUneEzzyI4c8uI53azypuGTADNWRswCgYIKoZIzj0EAwIDSAAwRQIgEdSK9A09Mb3OllA9i21NOy48GVkfw9H//RC4/dgcTgwCIQCdcUTNoLURkNPZCaVPZN+4M1Hr63tPU4MGyanWSAqP7Q==")!)
    /// The signed payloads of the seeds that verify (production and sandbox).
    static let signed: [[UInt8]] = [
        Array("eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlCd3pDQ0FXbWdBd0lCQWdJQkF6QUtCZ2dxaGtqT1BRUURBakExTVJjd0ZRWURWUVFLREE1eVpXTnZibU5wYkdVZ2RHVnpkREVhTUJnR0ExVUVBd3dSVkdWemRDQkpiblJsY20xbFpHbGhkR1V3SGhjTk1qWXhNakF4TVRreU9UUTRXaGNOTXpZeE1USTRNVGt5T1RRNFdqQXRNUmN3RlFZRFZRUUtEQTV5WldOdmJtTnBiR1VnZEdWemRERVNNQkFHQTFVRUF3d0pWR1Z6ZENCTVpXRm1NRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUV3TUtJdVhxaDFNRTVsWFJhbXdnZ0dwRVNYcENMNWZmM1dXd01jVXZxQmE5RDBtNEdSV0gyTGN4a1lYMElFc0FpLzMySHF4cTk4eDlMd0pJNlFaV1lDcU55TUhBd0RBWURWUjBUQVFIL0JBSXdBREFPQmdOVkhROEJBZjhFQkFNQ0I0QXdIUVlEVlIwT0JCWUVGSjlFNlNiaUdyRDB2VVpISDdGOXBKckF0WlR3TUI4R0ExVWRJd1FZTUJhQUZIWThIdDNGREpxUGhieFQxbjY0OTJacFMyalFNQkFHQ2lxR1NJYjNZMlFHQ3dFRUFnVUFNQW9HQ0NxR1NNNDlCQU1DQTBnQU1FVUNJREtQT0hlSGQ1S3pzRDhGc010aDdrd2w1YVgrOWtZeXlJaUY0bUx6TldreUFpRUEra3VBcUZlbnBPTzgwVEY1bnh4STVqQmhsUVJZTWFqYklaSVFYSDNSaVljPSIsIk1JSUJ5VENDQVcrZ0F3SUJBZ0lCQWpBS0JnZ3Foa2pPUFFRREFqQXRNUmN3RlFZRFZRUUtEQTV5WldOdmJtTnBiR1VnZEdWemRERVNNQkFHQTFVRUF3d0pWR1Z6ZENCU2IyOTBNQjRYRFRJMk1USXdNVEU1TWprME9Gb1hEVE0yTVRFeU9ERTVNamswT0Zvd05URVhNQlVHQTFVRUNnd09jbVZqYjI1amFXeGxJSFJsYzNReEdqQVlCZ05WQkFNTUVWUmxjM1FnU1c1MFpYSnRaV1JwWVhSbE1Ga3dFd1lIS29aSXpqMENBUVlJS29aSXpqMERBUWNEUWdBRWpEdzBxcXo2VE9Dcm9UUFViVVZ2eVdkQjZYdnkrbUdTeFBQVXJ2RWRTS2JYTW9IZjJXbXlvTTMrQWw5Q09JR1l4ZVBuOTdoTzgyN2xPK1h5Z1Vkc0FLTjRNSFl3RWdZRFZSMFRBUUgvQkFnd0JnRUIvd0lCQURBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhZOEh0M0ZESnFQaGJ4VDFuNjQ5MlpwUzJqUU1COEdBMVVkSXdRWU1CYUFGSjNoTTg4aU9IUExpT2QyczhxYmhrd0F6VmtiTUJBR0NpcUdTSWIzWTJRR0FnRUVBZ1VBTUFvR0NDcUdTTTQ5QkFNQ0EwZ0FNRVVDSVFDZFp0OW02eHlOUjloNlIyTnJ0YmR4TEgwbUpHRyt0NzE4eFl0aks4cWxiUUlnRWFWbWw2MzZWaG9HNzQxMHY5ZEJSUlJic29Ta09EUkxPMktSeEE2VFpjMD0iLCJNSUlCbmpDQ0FVU2dBd0lCQWdJVWVTNnc4dWlXSGU3a0dIYXFia3h0c1RrSGttVXdDZ1lJS29aSXpqMEVBd0l3TFRFWE1CVUdBMVVFQ2d3T2NtVmpiMjVqYVd4bElIUmxjM1F4RWpBUUJnTlZCQU1NQ1ZSbGMzUWdVbTl2ZERBZUZ3MHlOakV5TURFeE9USTVORGhhRncwek5qRXhNamd4T1RJNU5EaGFNQzB4RnpBVkJnTlZCQW9NRG5KbFkyOXVZMmxzWlNCMFpYTjBNUkl3RUFZRFZRUUREQWxVWlhOMElGSnZiM1F3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVM1ZnRNcm5BckZYV1VQeEtCN1Bia2xEYm5lMkRyOGppSzBjdFVkTVl3dlR0NlRxb3VTc3VjYWUyWTk4WkVpTzB3cS80Wm4rdmsxUm5mYUttNnNuR2pRbzBJd1FEQVBCZ05WSFJNQkFmOEVCVEFEQVFIL01BNEdBMVVkRHdFQi93UUVBd0lCQmpBZEJnTlZIUTRFRmdRVW5lRXp6eUk0Yzh1STUzYXp5cHVHVEFETldSc3dDZ1lJS29aSXpqMEVBd0lEU0FBd1JRSWdFZFNLOUEwOU1iM09sbEE5aTIxTk95NDhHVmtmdzlILy9SQzQvZGdjVGd3Q0lRQ2RjVVROb0xVUmtOUFpDYVZQWk4rNE0xSHI2M3RQVTRNR3lhbldTQXFQN1E9PSJdfQ.eyJub3RpZmljYXRpb25UeXBlIjoiUkVGVU5EIiwibm90aWZpY2F0aW9uVVVJRCI6InNlZWQtcmVmdW5kIiwidmVyc2lvbiI6IjIuMCIsInNpZ25lZERhdGUiOjE4MDAwMDAwMDAwMDAsImRhdGEiOnsiYXBwQXBwbGVJZCI6MTIzNDU2Nzg5MCwiYnVuZGxlSWQiOiJjb20uZXhhbXBsZS5hcHAiLCJlbnZpcm9ubWVudCI6IlByb2R1Y3Rpb24iLCJzaWduZWRUcmFuc2FjdGlvbkluZm8iOiJleUpoYkdjaU9pSkZVekkxTmlJc0luZzFZeUk2V3lKTlNVbENkM3BEUTBGWGJXZEJkMGxDUVdkSlFrRjZRVXRDWjJkeGFHdHFUMUJSVVVSQmFrRXhUVkpqZDBaUldVUldVVkZMUkVFMWVWcFhUblppYlU1d1lrZFZaMlJIVm5wa1JFVmhUVUpuUjBFeFZVVkJkM2RTVmtkV2VtUkRRa3BpYmxKc1kyMHhiRnBIYkdoa1IxVjNTR2hqVGsxcVdYaE5ha0Y0VFZScmVVOVVVVFJYYUdOT1RYcFplRTFVU1RSTlZHdDVUMVJSTkZkcVFYUk5VbU4zUmxGWlJGWlJVVXRFUVRWNVdsZE9kbUp0VG5CaVIxVm5aRWRXZW1SRVJWTk5Ra0ZIUVRGVlJVRjNkMHBXUjFaNlpFTkNUVnBYUm0xTlJtdDNSWGRaU0V0dldrbDZhakJEUVZGWlNVdHZXa2w2YWpCRVFWRmpSRkZuUVVWM1RVdEpkVmh4YURGTlJUVnNXRkpoYlhkblowZHdSVk5ZY0VOTU5XWm1NMWRYZDAxalZYWnhRbUU1UkRCdE5FZFNWMGd5VEdONGExbFlNRWxGYzBGcEx6TXlTSEY0Y1RrNGVEbE1kMHBKTmxGYVYxbERjVTU1VFVoQmQwUkJXVVJXVWpCVVFWRklMMEpCU1hkQlJFRlBRbWRPVmtoUk9FSkJaamhGUWtGTlEwSTBRWGRJVVZsRVZsSXdUMEpDV1VWR1NqbEZObE5pYVVkeVJEQjJWVnBJU0RkR09YQktja0YwV2xSM1RVSTRSMEV4VldSSmQxRlpUVUpoUVVaSVdUaElkRE5HUkVweFVHaGllRlF4YmpZME9USmFjRk15YWxGTlFrRkhRMmx4UjFOSllqTlpNbEZIUTNkRlJVRm5WVUZOUVc5SFEwTnhSMU5OTkRsQ1FVMURRVEJuUVUxRlZVTkpSRXRRVDBobFNHUTFTM3B6UkRoR2MwMTBhRGRyZDJ3MVlWZ3JPV3RaZVhsSmFVWTBiVXg2VGxkcmVVRnBSVUVyYTNWQmNVWmxibkJQVHpnd1ZFWTFibmg0U1RWcVFtaHNVVkpaVFdGcVlrbGFTVkZZU0ROU2FWbGpQU0lzSWsxSlNVSjVWRU5EUVZjclowRjNTVUpCWjBsQ1FXcEJTMEpuWjNGb2EycFBVRkZSUkVGcVFYUk5VbU4zUmxGWlJGWlJVVXRFUVRWNVdsZE9kbUp0VG5CaVIxVm5aRWRXZW1SRVJWTk5Ra0ZIUVRGVlJVRjNkMHBXUjFaNlpFTkNVMkl5T1RCTlFqUllSRlJKTWsxVVNYZE5WRVUxVFdwck1FOUdiMWhFVkUweVRWUkZlVTlFUlRWTmFtc3dUMFp2ZDA1VVJWaE5RbFZIUVRGVlJVTm5kMDlqYlZacVlqSTFhbUZYZUd4SlNGSnNZek5SZUVkcVFWbENaMDVXUWtGTlRVVldVbXhqTTFGblUxYzFNRnBZU25SYVYxSndXVmhTYkUxR2EzZEZkMWxJUzI5YVNYcHFNRU5CVVZsSlMyOWFTWHBxTUVSQlVXTkVVV2RCUldwRWR6QnhjWG8yVkU5RGNtOVVVRlZpVlZaMmVWZGtRalpZZG5rcmJVZFRlRkJRVlhKMlJXUlRTMkpZVFc5SVpqSlhiWGx2VFRNclFXdzVRMDlKUjFsNFpWQnVPVGRvVHpneU4yeFBLMWg1WjFWa2MwRkxUalJOU0ZsM1JXZFpSRlpTTUZSQlVVZ3ZRa0ZuZDBKblJVSXZkMGxDUVVSQlQwSm5UbFpJVVRoQ1FXWTRSVUpCVFVOQlVWbDNTRkZaUkZaU01FOUNRbGxGUmtoWk9FaDBNMFpFU25GUWFHSjRWREZ1TmpRNU1scHdVekpxVVUxQ09FZEJNVlZrU1hkUldVMUNZVUZHU2pOb1RUZzRhVTlJVUV4cFQyUXljemh4WW1ocmQwRjZWbXRpVFVKQlIwTnBjVWRUU1dJeldUSlJSMEZuUlVWQloxVkJUVUZ2UjBORGNVZFRUVFE1UWtGTlEwRXdaMEZOUlZWRFNWRkRaRnAwT1cwMmVIbE9VamxvTmxJeVRuSjBZbVI0VEVnd2JVcEhSeXQwTnpFNGVGbDBha3M0Y1d4aVVVbG5SV0ZXYld3Mk16WldhRzlITnpReE1IWTVaRUpTVWxKaWMyOVRhMDlFVWt4UE1rdFNlRUUyVkZwak1EMGlMQ0pOU1VsQ2JtcERRMEZWVTJkQmQwbENRV2RKVldWVE5uYzRkV2xYU0dVM2EwZElZWEZpYTNoMGMxUnJTR3R0VlhkRFoxbEpTMjlhU1hwcU1FVkJkMGwzVEZSRldFMUNWVWRCTVZWRlEyZDNUMk50Vm1waU1qVnFZVmQ0YkVsSVVteGpNMUY0UldwQlVVSm5UbFpDUVUxTlExWlNiR016VVdkVmJUbDJaRVJCWlVaM01IbE9ha1Y1VFVSRmVFOVVTVFZPUkdoaFJuY3dlazVxUlhoTmFtZDRUMVJKTlU1RWFHRk5RekI0Um5wQlZrSm5UbFpDUVc5TlJHNUtiRmt5T1hWWk1teHpXbE5DTUZwWVRqQk5Va2wzUlVGWlJGWlJVVVJFUVd4VldsaE9NRWxHU25aaU0xRjNWMVJCVkVKblkzRm9hMnBQVUZGSlFrSm5aM0ZvYTJwUFVGRk5Ra0ozVGtOQlFWTTFablJOY201QmNrWllWMVZRZUV0Q04xQmlhMnhFWW01bE1rUnlPR3BwU3pCamRGVmtUVmwzZGxSME5sUnhiM1ZUYzNWallXVXlXVGs0V2tWcFR6QjNjUzgwV200cmRtc3hVbTVtWVV0dE5uTnVSMnBSYnpCSmQxRkVRVkJDWjA1V1NGSk5Ra0ZtT0VWQ1ZFRkVRVkZJTDAxQk5FZEJNVlZrUkhkRlFpOTNVVVZCZDBsQ1FtcEJaRUpuVGxaSVVUUkZSbWRSVlc1bFJYcDZlVWswWXpoMVNUVXpZWHA1Y0hWSFZFRkVUbGRTYzNkRFoxbEpTMjlhU1hwcU1FVkJkMGxFVTBGQmQxSlJTV2RGWkZOTE9VRXdPVTFpTTA5c2JFRTVhVEl4VGs5NU5EaEhWbXRtZHpsSUx5OVNRelF2WkdkalZHZDNRMGxSUTJSalZWUk9iMHhWVW10T1VGcERZVlpRV2s0ck5FMHhTSEkyTTNSUVZUUk5SM2xoYmxkVFFYRlFOMUU5UFNKZGZRLmV5SjBjbUZ1YzJGamRHbHZia2xrSWpvaU16QXdNU0lzSW05eWFXZHBibUZzVkhKaGJuTmhZM1JwYjI1SlpDSTZJak13TURFaUxDSndjbTlrZFdOMFNXUWlPaUpuWlcxeklpd2lZblZ1Wkd4bFNXUWlPaUpqYjIwdVpYaGhiWEJzWlM1aGNIQWlMQ0psYm5acGNtOXViV1Z1ZENJNklsQnliMlIxWTNScGIyNGlMQ0p3ZFhKamFHRnpaVVJoZEdVaU9qRTNPVGs1T1RZME1EQXdNREFzSW5OcFoyNWxaRVJoZEdVaU9qRTRNREF3TURBd01EQXdNREFzSW5SNWNHVWlPaUpEYjI1emRXMWhZbXhsSWl3aWNtVjJiMk5oZEdsdmJrUmhkR1VpT2pFM09UazVPVGs1TkRBd01EQXNJbkpsZG05allYUnBiMjVTWldGemIyNGlPakI5LnVoOS12elNxbU12bXBnV3lMWHB5bXJmR1p2bmhVUC0tRXktczVDZElqZEJENmtXVktOX1lxSU9JdGdUR2kxem92MTl3WTBIUmNIaEs0aVVSb1FmcDZRIn19.PRpYzffNf3NuFr70FqymmbnLquZ0IpkL7Ntcon_V-2QH2swnIi5jdsThrvjfq5L2BYVAQTh4ykAlJJqwcXyxKw".utf8),
        Array("eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlCd3pDQ0FXbWdBd0lCQWdJQkF6QUtCZ2dxaGtqT1BRUURBakExTVJjd0ZRWURWUVFLREE1eVpXTnZibU5wYkdVZ2RHVnpkREVhTUJnR0ExVUVBd3dSVkdWemRDQkpiblJsY20xbFpHbGhkR1V3SGhjTk1qWXhNakF4TVRreU9UUTRXaGNOTXpZeE1USTRNVGt5T1RRNFdqQXRNUmN3RlFZRFZRUUtEQTV5WldOdmJtTnBiR1VnZEdWemRERVNNQkFHQTFVRUF3d0pWR1Z6ZENCTVpXRm1NRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUV3TUtJdVhxaDFNRTVsWFJhbXdnZ0dwRVNYcENMNWZmM1dXd01jVXZxQmE5RDBtNEdSV0gyTGN4a1lYMElFc0FpLzMySHF4cTk4eDlMd0pJNlFaV1lDcU55TUhBd0RBWURWUjBUQVFIL0JBSXdBREFPQmdOVkhROEJBZjhFQkFNQ0I0QXdIUVlEVlIwT0JCWUVGSjlFNlNiaUdyRDB2VVpISDdGOXBKckF0WlR3TUI4R0ExVWRJd1FZTUJhQUZIWThIdDNGREpxUGhieFQxbjY0OTJacFMyalFNQkFHQ2lxR1NJYjNZMlFHQ3dFRUFnVUFNQW9HQ0NxR1NNNDlCQU1DQTBnQU1FVUNJREtQT0hlSGQ1S3pzRDhGc010aDdrd2w1YVgrOWtZeXlJaUY0bUx6TldreUFpRUEra3VBcUZlbnBPTzgwVEY1bnh4STVqQmhsUVJZTWFqYklaSVFYSDNSaVljPSIsIk1JSUJ5VENDQVcrZ0F3SUJBZ0lCQWpBS0JnZ3Foa2pPUFFRREFqQXRNUmN3RlFZRFZRUUtEQTV5WldOdmJtTnBiR1VnZEdWemRERVNNQkFHQTFVRUF3d0pWR1Z6ZENCU2IyOTBNQjRYRFRJMk1USXdNVEU1TWprME9Gb1hEVE0yTVRFeU9ERTVNamswT0Zvd05URVhNQlVHQTFVRUNnd09jbVZqYjI1amFXeGxJSFJsYzNReEdqQVlCZ05WQkFNTUVWUmxjM1FnU1c1MFpYSnRaV1JwWVhSbE1Ga3dFd1lIS29aSXpqMENBUVlJS29aSXpqMERBUWNEUWdBRWpEdzBxcXo2VE9Dcm9UUFViVVZ2eVdkQjZYdnkrbUdTeFBQVXJ2RWRTS2JYTW9IZjJXbXlvTTMrQWw5Q09JR1l4ZVBuOTdoTzgyN2xPK1h5Z1Vkc0FLTjRNSFl3RWdZRFZSMFRBUUgvQkFnd0JnRUIvd0lCQURBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhZOEh0M0ZESnFQaGJ4VDFuNjQ5MlpwUzJqUU1COEdBMVVkSXdRWU1CYUFGSjNoTTg4aU9IUExpT2QyczhxYmhrd0F6VmtiTUJBR0NpcUdTSWIzWTJRR0FnRUVBZ1VBTUFvR0NDcUdTTTQ5QkFNQ0EwZ0FNRVVDSVFDZFp0OW02eHlOUjloNlIyTnJ0YmR4TEgwbUpHRyt0NzE4eFl0aks4cWxiUUlnRWFWbWw2MzZWaG9HNzQxMHY5ZEJSUlJic29Ta09EUkxPMktSeEE2VFpjMD0iLCJNSUlCbmpDQ0FVU2dBd0lCQWdJVWVTNnc4dWlXSGU3a0dIYXFia3h0c1RrSGttVXdDZ1lJS29aSXpqMEVBd0l3TFRFWE1CVUdBMVVFQ2d3T2NtVmpiMjVqYVd4bElIUmxjM1F4RWpBUUJnTlZCQU1NQ1ZSbGMzUWdVbTl2ZERBZUZ3MHlOakV5TURFeE9USTVORGhhRncwek5qRXhNamd4T1RJNU5EaGFNQzB4RnpBVkJnTlZCQW9NRG5KbFkyOXVZMmxzWlNCMFpYTjBNUkl3RUFZRFZRUUREQWxVWlhOMElGSnZiM1F3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVM1ZnRNcm5BckZYV1VQeEtCN1Bia2xEYm5lMkRyOGppSzBjdFVkTVl3dlR0NlRxb3VTc3VjYWUyWTk4WkVpTzB3cS80Wm4rdmsxUm5mYUttNnNuR2pRbzBJd1FEQVBCZ05WSFJNQkFmOEVCVEFEQVFIL01BNEdBMVVkRHdFQi93UUVBd0lCQmpBZEJnTlZIUTRFRmdRVW5lRXp6eUk0Yzh1STUzYXp5cHVHVEFETldSc3dDZ1lJS29aSXpqMEVBd0lEU0FBd1JRSWdFZFNLOUEwOU1iM09sbEE5aTIxTk95NDhHVmtmdzlILy9SQzQvZGdjVGd3Q0lRQ2RjVVROb0xVUmtOUFpDYVZQWk4rNE0xSHI2M3RQVTRNR3lhbldTQXFQN1E9PSJdfQ.eyJub3RpZmljYXRpb25UeXBlIjoiUkVGVU5EX1JFVkVSU0VEIiwibm90aWZpY2F0aW9uVVVJRCI6InNlZWQtcmV2ZXJzZWQiLCJ2ZXJzaW9uIjoiMi4wIiwic2lnbmVkRGF0ZSI6MTgwMDAwMDAwMDAwMCwiZGF0YSI6eyJhcHBBcHBsZUlkIjoxMjM0NTY3ODkwLCJidW5kbGVJZCI6ImNvbS5leGFtcGxlLmFwcCIsImVudmlyb25tZW50IjoiUHJvZHVjdGlvbiIsInNpZ25lZFRyYW5zYWN0aW9uSW5mbyI6ImV5SmhiR2NpT2lKRlV6STFOaUlzSW5nMVl5STZXeUpOU1VsQ2QzcERRMEZYYldkQmQwbENRV2RKUWtGNlFVdENaMmR4YUd0cVQxQlJVVVJCYWtFeFRWSmpkMFpSV1VSV1VWRkxSRUUxZVZwWFRuWmliVTV3WWtkVloyUkhWbnBrUkVWaFRVSm5SMEV4VlVWQmQzZFNWa2RXZW1SRFFrcGlibEpzWTIweGJGcEhiR2hrUjFWM1NHaGpUazFxV1hoTmFrRjRUVlJyZVU5VVVUUlhhR05PVFhwWmVFMVVTVFJOVkd0NVQxUlJORmRxUVhSTlVtTjNSbEZaUkZaUlVVdEVRVFY1V2xkT2RtSnRUbkJpUjFWblpFZFdlbVJFUlZOTlFrRkhRVEZWUlVGM2QwcFdSMVo2WkVOQ1RWcFhSbTFOUm10M1JYZFpTRXR2V2tsNmFqQkRRVkZaU1V0dldrbDZhakJFUVZGalJGRm5RVVYzVFV0SmRWaHhhREZOUlRWc1dGSmhiWGRuWjBkd1JWTlljRU5NTldabU0xZFhkMDFqVlhaeFFtRTVSREJ0TkVkU1YwZ3lUR040YTFsWU1FbEZjMEZwTHpNeVNIRjRjVGs0ZURsTWQwcEpObEZhVjFsRGNVNTVUVWhCZDBSQldVUldVakJVUVZGSUwwSkJTWGRCUkVGUFFtZE9Wa2hST0VKQlpqaEZRa0ZOUTBJMFFYZElVVmxFVmxJd1QwSkNXVVZHU2psRk5sTmlhVWR5UkRCMlZWcElTRGRHT1hCS2NrRjBXbFIzVFVJNFIwRXhWV1JKZDFGWlRVSmhRVVpJV1RoSWRETkdSRXB4VUdoaWVGUXhialkwT1RKYWNGTXlhbEZOUWtGSFEybHhSMU5KWWpOWk1sRkhRM2RGUlVGblZVRk5RVzlIUTBOeFIxTk5ORGxDUVUxRFFUQm5RVTFGVlVOSlJFdFFUMGhsU0dRMVMzcHpSRGhHYzAxMGFEZHJkMncxWVZnck9XdFplWGxKYVVZMGJVeDZUbGRyZVVGcFJVRXJhM1ZCY1VabGJuQlBUemd3VkVZMWJuaDRTVFZxUW1oc1VWSlpUV0ZxWWtsYVNWRllTRE5TYVZsalBTSXNJazFKU1VKNVZFTkRRVmNyWjBGM1NVSkJaMGxDUVdwQlMwSm5aM0ZvYTJwUFVGRlJSRUZxUVhSTlVtTjNSbEZaUkZaUlVVdEVRVFY1V2xkT2RtSnRUbkJpUjFWblpFZFdlbVJFUlZOTlFrRkhRVEZWUlVGM2QwcFdSMVo2WkVOQ1UySXlPVEJOUWpSWVJGUkpNazFVU1hkTlZFVTFUV3ByTUU5R2IxaEVWRTB5VFZSRmVVOUVSVFZOYW1zd1QwWnZkMDVVUlZoTlFsVkhRVEZWUlVObmQwOWpiVlpxWWpJMWFtRlhlR3hKU0ZKc1l6TlJlRWRxUVZsQ1owNVdRa0ZOVFVWV1VteGpNMUZuVTFjMU1GcFlTblJhVjFKd1dWaFNiRTFHYTNkRmQxbElTMjlhU1hwcU1FTkJVVmxKUzI5YVNYcHFNRVJCVVdORVVXZEJSV3BFZHpCeGNYbzJWRTlEY205VVVGVmlWVloyZVZka1FqWllkbmtyYlVkVGVGQlFWWEoyUldSVFMySllUVzlJWmpKWGJYbHZUVE1yUVd3NVEwOUpSMWw0WlZCdU9UZG9Uemd5TjJ4UEsxaDVaMVZrYzBGTFRqUk5TRmwzUldkWlJGWlNNRlJCVVVndlFrRm5kMEpuUlVJdmQwbENRVVJCVDBKblRsWklVVGhDUVdZNFJVSkJUVU5CVVZsM1NGRlpSRlpTTUU5Q1FsbEZSa2haT0VoME0wWkVTbkZRYUdKNFZERnVOalE1TWxwd1V6SnFVVTFDT0VkQk1WVmtTWGRSV1UxQ1lVRkdTak5vVFRnNGFVOUlVRXhwVDJReWN6aHhZbWhyZDBGNlZtdGlUVUpCUjBOcGNVZFRTV0l6V1RKUlIwRm5SVVZCWjFWQlRVRnZSME5EY1VkVFRUUTVRa0ZOUTBFd1owRk5SVlZEU1ZGRFpGcDBPVzAyZUhsT1VqbG9ObEl5VG5KMFltUjRURWd3YlVwSFJ5dDBOekU0ZUZsMGFrczRjV3hpVVVsblJXRldiV3cyTXpaV2FHOUhOelF4TUhZNVpFSlNVbEppYzI5VGEwOUVVa3hQTWt0U2VFRTJWRnBqTUQwaUxDSk5TVWxDYm1wRFEwRlZVMmRCZDBsQ1FXZEpWV1ZUTm5jNGRXbFhTR1UzYTBkSVlYRmlhM2gwYzFSclNHdHRWWGREWjFsSlMyOWFTWHBxTUVWQmQwbDNURlJGV0UxQ1ZVZEJNVlZGUTJkM1QyTnRWbXBpTWpWcVlWZDRiRWxJVW14ak0xRjRSV3BCVVVKblRsWkNRVTFOUTFaU2JHTXpVV2RWYlRsMlpFUkJaVVozTUhsT2FrVjVUVVJGZUU5VVNUVk9SR2hoUm5jd2VrNXFSWGhOYW1kNFQxUkpOVTVFYUdGTlF6QjRSbnBCVmtKblRsWkNRVzlOUkc1S2JGa3lPWFZaTW14eldsTkNNRnBZVGpCTlVrbDNSVUZaUkZaUlVVUkVRV3hWV2xoT01FbEdTblppTTFGM1YxUkJWRUpuWTNGb2EycFBVRkZKUWtKblozRm9hMnBQVUZGTlFrSjNUa05CUVZNMVpuUk5jbTVCY2taWVYxVlFlRXRDTjFCaWEyeEVZbTVsTWtSeU9HcHBTekJqZEZWa1RWbDNkbFIwTmxSeGIzVlRjM1ZqWVdVeVdUazRXa1ZwVHpCM2NTODBXbTRyZG1zeFVtNW1ZVXR0Tm5OdVIycFJiekJKZDFGRVFWQkNaMDVXU0ZKTlFrRm1PRVZDVkVGRVFWRklMMDFCTkVkQk1WVmtSSGRGUWk5M1VVVkJkMGxDUW1wQlpFSm5UbFpJVVRSRlJtZFJWVzVsUlhwNmVVazBZemgxU1RVellYcDVjSFZIVkVGRVRsZFNjM2REWjFsSlMyOWFTWHBxTUVWQmQwbEVVMEZCZDFKUlNXZEZaRk5MT1VFd09VMWlNMDlzYkVFNWFUSXhUazk1TkRoSFZtdG1kemxJTHk5U1F6UXZaR2RqVkdkM1EwbFJRMlJqVlZST2IweFZVbXRPVUZwRFlWWlFXazRyTkUweFNISTJNM1JRVlRSTlIzbGhibGRUUVhGUU4xRTlQU0pkZlEuZXlKMGNtRnVjMkZqZEdsdmJrbGtJam9pTXpBd01TSXNJbTl5YVdkcGJtRnNWSEpoYm5OaFkzUnBiMjVKWkNJNklqTXdNREVpTENKd2NtOWtkV04wU1dRaU9pSm5aVzF6SWl3aVluVnVaR3hsU1dRaU9pSmpiMjB1WlhoaGJYQnNaUzVoY0hBaUxDSmxiblpwY205dWJXVnVkQ0k2SWxCeWIyUjFZM1JwYjI0aUxDSndkWEpqYUdGelpVUmhkR1VpT2pFM09UazVPVFkwTURBd01EQXNJbk5wWjI1bFpFUmhkR1VpT2pFNE1EQXdNREF3TURBd01EQXNJblI1Y0dVaU9pSkRiMjV6ZFcxaFlteGxJaXdpY21WMmIyTmhkR2x2YmtSaGRHVWlPakUzT1RrNU9UazVOREF3TURBc0luSmxkbTlqWVhScGIyNVNaV0Z6YjI0aU9qQjkuaDE2eGJIanZ2dVBkMHZEM09UUXdqOEFZQmw3SmFKZHhlTmNZTTZLY2haTEcySU1lUnFESTMwWDU3T0JyZ0hScnM4X01tQ1o0Q2FHSUJzajhXckVpbUEifX0.ID6NWZ5heWbWjJxPecz9UKGUU8EIcRE1Jc1gRnGu3FaUxUO1T8l-U1jT6or_XDuyJ9EWYP79LDvnAlSWXjgVvw".utf8),
        Array("eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlCd3pDQ0FXbWdBd0lCQWdJQkF6QUtCZ2dxaGtqT1BRUURBakExTVJjd0ZRWURWUVFLREE1eVpXTnZibU5wYkdVZ2RHVnpkREVhTUJnR0ExVUVBd3dSVkdWemRDQkpiblJsY20xbFpHbGhkR1V3SGhjTk1qWXhNakF4TVRreU9UUTRXaGNOTXpZeE1USTRNVGt5T1RRNFdqQXRNUmN3RlFZRFZRUUtEQTV5WldOdmJtTnBiR1VnZEdWemRERVNNQkFHQTFVRUF3d0pWR1Z6ZENCTVpXRm1NRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUV3TUtJdVhxaDFNRTVsWFJhbXdnZ0dwRVNYcENMNWZmM1dXd01jVXZxQmE5RDBtNEdSV0gyTGN4a1lYMElFc0FpLzMySHF4cTk4eDlMd0pJNlFaV1lDcU55TUhBd0RBWURWUjBUQVFIL0JBSXdBREFPQmdOVkhROEJBZjhFQkFNQ0I0QXdIUVlEVlIwT0JCWUVGSjlFNlNiaUdyRDB2VVpISDdGOXBKckF0WlR3TUI4R0ExVWRJd1FZTUJhQUZIWThIdDNGREpxUGhieFQxbjY0OTJacFMyalFNQkFHQ2lxR1NJYjNZMlFHQ3dFRUFnVUFNQW9HQ0NxR1NNNDlCQU1DQTBnQU1FVUNJREtQT0hlSGQ1S3pzRDhGc010aDdrd2w1YVgrOWtZeXlJaUY0bUx6TldreUFpRUEra3VBcUZlbnBPTzgwVEY1bnh4STVqQmhsUVJZTWFqYklaSVFYSDNSaVljPSIsIk1JSUJ5VENDQVcrZ0F3SUJBZ0lCQWpBS0JnZ3Foa2pPUFFRREFqQXRNUmN3RlFZRFZRUUtEQTV5WldOdmJtTnBiR1VnZEdWemRERVNNQkFHQTFVRUF3d0pWR1Z6ZENCU2IyOTBNQjRYRFRJMk1USXdNVEU1TWprME9Gb1hEVE0yTVRFeU9ERTVNamswT0Zvd05URVhNQlVHQTFVRUNnd09jbVZqYjI1amFXeGxJSFJsYzNReEdqQVlCZ05WQkFNTUVWUmxjM1FnU1c1MFpYSnRaV1JwWVhSbE1Ga3dFd1lIS29aSXpqMENBUVlJS29aSXpqMERBUWNEUWdBRWpEdzBxcXo2VE9Dcm9UUFViVVZ2eVdkQjZYdnkrbUdTeFBQVXJ2RWRTS2JYTW9IZjJXbXlvTTMrQWw5Q09JR1l4ZVBuOTdoTzgyN2xPK1h5Z1Vkc0FLTjRNSFl3RWdZRFZSMFRBUUgvQkFnd0JnRUIvd0lCQURBT0JnTlZIUThCQWY4RUJBTUNBUVl3SFFZRFZSME9CQllFRkhZOEh0M0ZESnFQaGJ4VDFuNjQ5MlpwUzJqUU1COEdBMVVkSXdRWU1CYUFGSjNoTTg4aU9IUExpT2QyczhxYmhrd0F6VmtiTUJBR0NpcUdTSWIzWTJRR0FnRUVBZ1VBTUFvR0NDcUdTTTQ5QkFNQ0EwZ0FNRVVDSVFDZFp0OW02eHlOUjloNlIyTnJ0YmR4TEgwbUpHRyt0NzE4eFl0aks4cWxiUUlnRWFWbWw2MzZWaG9HNzQxMHY5ZEJSUlJic29Ta09EUkxPMktSeEE2VFpjMD0iLCJNSUlCbmpDQ0FVU2dBd0lCQWdJVWVTNnc4dWlXSGU3a0dIYXFia3h0c1RrSGttVXdDZ1lJS29aSXpqMEVBd0l3TFRFWE1CVUdBMVVFQ2d3T2NtVmpiMjVqYVd4bElIUmxjM1F4RWpBUUJnTlZCQU1NQ1ZSbGMzUWdVbTl2ZERBZUZ3MHlOakV5TURFeE9USTVORGhhRncwek5qRXhNamd4T1RJNU5EaGFNQzB4RnpBVkJnTlZCQW9NRG5KbFkyOXVZMmxzWlNCMFpYTjBNUkl3RUFZRFZRUUREQWxVWlhOMElGSnZiM1F3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVM1ZnRNcm5BckZYV1VQeEtCN1Bia2xEYm5lMkRyOGppSzBjdFVkTVl3dlR0NlRxb3VTc3VjYWUyWTk4WkVpTzB3cS80Wm4rdmsxUm5mYUttNnNuR2pRbzBJd1FEQVBCZ05WSFJNQkFmOEVCVEFEQVFIL01BNEdBMVVkRHdFQi93UUVBd0lCQmpBZEJnTlZIUTRFRmdRVW5lRXp6eUk0Yzh1STUzYXp5cHVHVEFETldSc3dDZ1lJS29aSXpqMEVBd0lEU0FBd1JRSWdFZFNLOUEwOU1iM09sbEE5aTIxTk95NDhHVmtmdzlILy9SQzQvZGdjVGd3Q0lRQ2RjVVROb0xVUmtOUFpDYVZQWk4rNE0xSHI2M3RQVTRNR3lhbldTQXFQN1E9PSJdfQ.eyJub3RpZmljYXRpb25UeXBlIjoiUkVGVU5EIiwibm90aWZpY2F0aW9uVVVJRCI6InNlZWQtc2FuZGJveCIsInZlcnNpb24iOiIyLjAiLCJzaWduZWREYXRlIjoxODAwMDAwMDAwMDAwLCJkYXRhIjp7ImFwcEFwcGxlSWQiOjEyMzQ1Njc4OTAsImJ1bmRsZUlkIjoiY29tLmV4YW1wbGUuYXBwIiwiZW52aXJvbm1lbnQiOiJTYW5kYm94Iiwic2lnbmVkVHJhbnNhY3Rpb25JbmZvIjoiZXlKaGJHY2lPaUpGVXpJMU5pSXNJbmcxWXlJNld5Sk5TVWxDZDNwRFEwRlhiV2RCZDBsQ1FXZEpRa0Y2UVV0Q1oyZHhhR3RxVDFCUlVVUkJha0V4VFZKamQwWlJXVVJXVVZGTFJFRTFlVnBYVG5aaWJVNXdZa2RWWjJSSFZucGtSRVZoVFVKblIwRXhWVVZCZDNkU1ZrZFdlbVJEUWtwaWJsSnNZMjB4YkZwSGJHaGtSMVYzU0doalRrMXFXWGhOYWtGNFRWUnJlVTlVVVRSWGFHTk9UWHBaZUUxVVNUUk5WR3Q1VDFSUk5GZHFRWFJOVW1OM1JsRlpSRlpSVVV0RVFUVjVXbGRPZG1KdFRuQmlSMVZuWkVkV2VtUkVSVk5OUWtGSFFURlZSVUYzZDBwV1IxWjZaRU5DVFZwWFJtMU5SbXQzUlhkWlNFdHZXa2w2YWpCRFFWRlpTVXR2V2tsNmFqQkVRVkZqUkZGblFVVjNUVXRKZFZoeGFERk5SVFZzV0ZKaGJYZG5aMGR3UlZOWWNFTk1OV1ptTTFkWGQwMWpWWFp4UW1FNVJEQnRORWRTVjBneVRHTjRhMWxZTUVsRmMwRnBMek15U0hGNGNUazRlRGxNZDBwSk5sRmFWMWxEY1U1NVRVaEJkMFJCV1VSV1VqQlVRVkZJTDBKQlNYZEJSRUZQUW1kT1ZraFJPRUpCWmpoRlFrRk5RMEkwUVhkSVVWbEVWbEl3VDBKQ1dVVkdTamxGTmxOaWFVZHlSREIyVlZwSVNEZEdPWEJLY2tGMFdsUjNUVUk0UjBFeFZXUkpkMUZaVFVKaFFVWklXVGhJZEROR1JFcHhVR2hpZUZReGJqWTBPVEphY0ZNeWFsRk5Ra0ZIUTJseFIxTkpZak5aTWxGSFEzZEZSVUZuVlVGTlFXOUhRME54UjFOTk5EbENRVTFEUVRCblFVMUZWVU5KUkV0UVQwaGxTR1ExUzNwelJEaEdjMDEwYURkcmQydzFZVmdyT1d0WmVYbEphVVkwYlV4NlRsZHJlVUZwUlVFcmEzVkJjVVpsYm5CUFR6Z3dWRVkxYm5oNFNUVnFRbWhzVVZKWlRXRnFZa2xhU1ZGWVNETlNhVmxqUFNJc0lrMUpTVUo1VkVORFFWY3JaMEYzU1VKQlowbENRV3BCUzBKblozRm9hMnBQVUZGUlJFRnFRWFJOVW1OM1JsRlpSRlpSVVV0RVFUVjVXbGRPZG1KdFRuQmlSMVZuWkVkV2VtUkVSVk5OUWtGSFFURlZSVUYzZDBwV1IxWjZaRU5DVTJJeU9UQk5RalJZUkZSSk1rMVVTWGROVkVVMVRXcHJNRTlHYjFoRVZFMHlUVlJGZVU5RVJUVk5hbXN3VDBadmQwNVVSVmhOUWxWSFFURlZSVU5uZDA5amJWWnFZakkxYW1GWGVHeEpTRkpzWXpOUmVFZHFRVmxDWjA1V1FrRk5UVVZXVW14ak0xRm5VMWMxTUZwWVNuUmFWMUp3V1ZoU2JFMUdhM2RGZDFsSVMyOWFTWHBxTUVOQlVWbEpTMjlhU1hwcU1FUkJVV05FVVdkQlJXcEVkekJ4Y1hvMlZFOURjbTlVVUZWaVZWWjJlVmRrUWpaWWRua3JiVWRUZUZCUVZYSjJSV1JUUzJKWVRXOUlaakpYYlhsdlRUTXJRV3c1UTA5SlIxbDRaVkJ1T1Rkb1R6Z3lOMnhQSzFoNVoxVmtjMEZMVGpSTlNGbDNSV2RaUkZaU01GUkJVVWd2UWtGbmQwSm5SVUl2ZDBsQ1FVUkJUMEpuVGxaSVVUaENRV1k0UlVKQlRVTkJVVmwzU0ZGWlJGWlNNRTlDUWxsRlJraFpPRWgwTTBaRVNuRlFhR0o0VkRGdU5qUTVNbHB3VXpKcVVVMUNPRWRCTVZWa1NYZFJXVTFDWVVGR1NqTm9UVGc0YVU5SVVFeHBUMlF5Y3poeFltaHJkMEY2Vm10aVRVSkJSME5wY1VkVFNXSXpXVEpSUjBGblJVVkJaMVZCVFVGdlIwTkRjVWRUVFRRNVFrRk5RMEV3WjBGTlJWVkRTVkZEWkZwME9XMDJlSGxPVWpsb05sSXlUbkowWW1SNFRFZ3diVXBIUnl0ME56RTRlRmwwYWtzNGNXeGlVVWxuUldGV2JXdzJNelpXYUc5SE56UXhNSFk1WkVKU1VsSmljMjlUYTA5RVVreFBNa3RTZUVFMlZGcGpNRDBpTENKTlNVbENibXBEUTBGVlUyZEJkMGxDUVdkSlZXVlRObmM0ZFdsWFNHVTNhMGRJWVhGaWEzaDBjMVJyU0d0dFZYZERaMWxKUzI5YVNYcHFNRVZCZDBsM1RGUkZXRTFDVlVkQk1WVkZRMmQzVDJOdFZtcGlNalZxWVZkNGJFbElVbXhqTTFGNFJXcEJVVUpuVGxaQ1FVMU5RMVpTYkdNelVXZFZiVGwyWkVSQlpVWjNNSGxPYWtWNVRVUkZlRTlVU1RWT1JHaGhSbmN3ZWs1cVJYaE5hbWQ0VDFSSk5VNUVhR0ZOUXpCNFJucEJWa0puVGxaQ1FXOU5SRzVLYkZreU9YVlpNbXh6V2xOQ01GcFlUakJOVWtsM1JVRlpSRlpSVVVSRVFXeFZXbGhPTUVsR1NuWmlNMUYzVjFSQlZFSm5ZM0ZvYTJwUFVGRkpRa0puWjNGb2EycFBVRkZOUWtKM1RrTkJRVk0xWm5STmNtNUJja1pZVjFWUWVFdENOMUJpYTJ4RVltNWxNa1J5T0dwcFN6QmpkRlZrVFZsM2RsUjBObFJ4YjNWVGMzVmpZV1V5V1RrNFdrVnBUekIzY1M4MFdtNHJkbXN4VW01bVlVdHRObk51UjJwUmJ6QkpkMUZFUVZCQ1owNVdTRkpOUWtGbU9FVkNWRUZFUVZGSUwwMUJORWRCTVZWa1JIZEZRaTkzVVVWQmQwbENRbXBCWkVKblRsWklVVFJGUm1kUlZXNWxSWHA2ZVVrMFl6aDFTVFV6WVhwNWNIVkhWRUZFVGxkU2MzZERaMWxKUzI5YVNYcHFNRVZCZDBsRVUwRkJkMUpSU1dkRlpGTkxPVUV3T1UxaU0wOXNiRUU1YVRJeFRrOTVORGhIVm10bWR6bElMeTlTUXpRdlpHZGpWR2QzUTBsUlEyUmpWVlJPYjB4VlVtdE9VRnBEWVZaUVdrNHJORTB4U0hJMk0zUlFWVFJOUjNsaGJsZFRRWEZRTjFFOVBTSmRmUS5leUowY21GdWMyRmpkR2x2Ymtsa0lqb2lNekF3TWlJc0ltOXlhV2RwYm1Gc1ZISmhibk5oWTNScGIyNUpaQ0k2SWpNd01ESWlMQ0p3Y205a2RXTjBTV1FpT2lKblpXMXpJaXdpWW5WdVpHeGxTV1FpT2lKamIyMHVaWGhoYlhCc1pTNWhjSEFpTENKbGJuWnBjbTl1YldWdWRDSTZJbE5oYm1SaWIzZ2lMQ0p3ZFhKamFHRnpaVVJoZEdVaU9qRTNPVGs1T1RZME1EQXdNREFzSW5OcFoyNWxaRVJoZEdVaU9qRTRNREF3TURBd01EQXdNREFzSW5SNWNHVWlPaUpEYjI1emRXMWhZbXhsSWl3aWNtVjJiMk5oZEdsdmJrUmhkR1VpT2pFM09UazVPVGs1TkRBd01EQXNJbkpsZG05allYUnBiMjVTWldGemIyNGlPakI5LlRPbnRfU1VHQU1YRkZiUS1oVmtXaE9heVByRU0yWEdER045bUw3LTlZa2NZcFFXSzNvM2xXbm8xbUdlZHVTWjNUNlNCdW04d0pjUzI1aWZ2bkdGbGNBIn19.-smHov5GVU59Sp8Sdo_mMtVousc-rCZYGUkEnUEYgmxBH4NM-3EQx7QcEZ2Dcec4zScJiKcFjGKqcDWJfA-dAA".utf8)
    ]
    static let reader: NotificationFileReader = {
        let production = try! SignedDataVerifier(rootCertificates: [rootDER], bundleID: "com.example.app", environment: .production)
        let sandbox = try! SignedDataVerifier(rootCertificates: [rootDER], bundleID: "com.example.app", environment: .sandbox)
        return NotificationFileReader(appStore: NotificationFileReader.AppStoreVerifiers(production: production, sandbox: sandbox))
    }()

    static func run(_ input: [UInt8]) {
        // The stores' answers first: none of them is a spool document (each classifies as an
        // order file, which the order-file target covers).
        checkAnswers(input)
        let kind = SpoolDocument.classify(input)
        guard kind != .order else { return }
        do {
            let notification = try reader.read(input, kind: kind, now: now)
            invariant(kind == .appStoreNotification, "a \(kind) was taken in")
            invariant(signed.contains { contains(input, $0) }, "a notification came out of a payload nobody signed")
            invariant(!notification.notificationID.isEmpty && !notification.type.isEmpty, "a notification without id or type")
            invariant(notification.source == .appStore && notification.via == .file, "the wrong source")
            // A purchase the phone never sent (DESIGN §5b) comes only from a signed
            // ONE_TIME_CHARGE, with the verified transaction's own id and signed proof.
            if let purchase = notification.discovered {
                invariant(notification.type == AppStoreNotification.oneTimeCharge, "a \(notification.type) made a discovered purchase")
                invariant(purchase.transactionKey == notification.transactionID && purchase.proof.signedTransaction != nil, "a discovered purchase without its verified transaction")
            }
        } catch {
            invariant(!error.detail.contains("eyJ"), "a refusal echoes a JWS")
            invariant(!hasLineBreak(error.detail), "an unprintable refusal")
            if kind == .playNotification { invariant(error.code == .notificationNotVerifiable, "a Play push refused as \(error.code)") }
        }
        if kind == .playNotification { checkPlayPush(input) }
    }

    /// What the stores answer the daemon's own requests: a Pub/Sub pull, a look-up, a voided list.
    static func checkAnswers(_ input: [UInt8]) {
        // A Pub/Sub pull answer (DESIGN §5b): each message only a hint until Google confirms the
        // purchase it names — by itself it changes no order and keeps no purchase.
        if let answer = try? PubSubPullAnswer.parse(input) {
            invariant(answer.messages.count <= PubSubPullAnswer.maximumMessages, "more messages than a pull may carry")
            for message in answer.messages {
                invariant(!hasLineBreak(message.ackID) && !hasLineBreak(message.messageID), "an unprintable Pub/Sub id")
                guard let push = try? PlayNotification.parse(data: message.data, messageID: message.messageID) else { continue }
                let notification = StoreNotification.playPush(push)
                invariant(notification.effect == .none && notification.discovered == nil, "an unconfirmed pulled message decides something")
                invariant(notification.notificationID == "pubsub:\(message.messageID)", "a pulled message kept under another id than its push")
            }
        }
        checkOrderLookups(input)
        // What Google's voidedpurchases.list answers is read by the same core.
        if let page = try? PlayVoidedPurchase.parsePage(input) {
            for voided in page.purchases {
                let notification = StoreNotification.playVoided(voided, tokenDigest: "digest", via: .poll)
                invariant(notification.notificationID == "voided:digest:\(voided.voidedTimeMilliseconds)", "a voided purchase's id is not its digest and time")
                invariant(!hasLineBreak(notification.transactionID ?? ""), "an unprintable claim key")
            }
        }
    }

    /// Verifies the App Store's transactions a look-up returns, as the daemon's verifier does.
    static let transactions = try! SignedDataVerifier(rootCertificates: [rootDER], bundleID: "com.example.app", environment: .production)

    /// The production transactions the throwaway key signed: the ones inside the seeds' notifications.
    static let signedTransactions: [[UInt8]] = signed.compactMap { jws -> [UInt8]? in
        let parts = jws.split(separator: UInt8(ascii: "."))
        guard parts.count == 3, let payload = try? Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
            let data = (try? JSONParser().parse(payload))?["data"]?.objectValue, data["environment"]?.stringValue == "Production",
            let transaction = data["signedTransactionInfo"]?.stringValue
        else { return nil }
        return Array(transaction.utf8)
    }

    /// Support's look-ups (DESIGN §5b): a purchase comes out of Look Up Order ID's answer only for
    /// a transaction the key signed, and `recover` makes an order only of one paid, not refunded,
    /// not a subscription; an `orders.get` answer alone believes nothing, and with Google's
    /// confirmation makes an order only of a processed one-time purchase.
    static func checkOrderLookups(_ input: [UInt8]) {
        if let list = try? AppStoreDocument.orderLookup(input) {
            for jws in list {
                guard let payload = try? transactions.verify(jws, now: now), let transaction = try? AppStoreTransaction.parse(payload.json) else { continue }
                invariant(signedTransactions.contains { contains(input, $0) }, "a looked-up purchase came out of a transaction nobody signed")
                let found = LookedUpPurchase.appStore(transaction, signedTransaction: jws)
                invariant(found.purchase.proof.signedTransaction == jws && found.purchase.transactionKey == transaction.transactionID, "a looked-up purchase without its verified transaction")
                checkRecover(found)
            }
        }
        guard let order = try? PlayOrder.parse(input) else { return }
        invariant(!order.lineItems.isEmpty && !order.purchaseToken.isEmpty, "an order without items or token")
        for item in order.lineItems {
            for state in [PlayPurchase.purchased, PlayPurchase.pending] {
                var confirmation = PlayPurchase(purchaseState: state)
                confirmation.purchaseType = item.productID.count % 2 == 0 ? nil : 0
                let found = LookedUpPurchase.googlePlay(order, item: item, purchase: confirmation, package: "com.example.app", tokenDigest: "d")
                invariant(found.purchase.proof.purchaseToken == order.purchaseToken, "a Play purchase without the order's token")
                if case .makes = checkRecover(found) {
                    invariant(order.state == .processed && state == PlayPurchase.purchased && !item.isSubscription && !confirmation.isTest, "recover made an order of a Play purchase not paid")
                }
            }
        }
    }

    @discardableResult
    static func checkRecover(_ found: LookedUpPurchase) -> DiscoveryRules.Recovery {
        let recovery = DiscoveryRules.recover(found, holder: nil, known: nil, user: "user-1", allowTestPurchases: false)
        if case .makes(let order) = recovery {
            invariant(found.state == .purchased && found.purchase.revokedAt == nil && !found.purchase.isSubscription, "recover made an order of a purchase not paid")
            invariant(OrderFileParser.isValidOrderID(order.submission.orderID) && order.origin == .operator, "recover made an order with a bad id or origin")
        }
        let held = DiscoveryRules.recover(found, holder: "M-1", known: nil, user: "user-1", allowTestPurchases: true)
        invariant(held == .leaves(.heldBy(orderID: "M-1")), "recover made a second order of a held purchase")
        return recovery
    }

    /// With `[GooglePlay]` configured a push is taken in — recorded, and never able to change an
    /// order by itself (only the voided purchases list Google answers can).
    static let playReader = NotificationFileReader(appStore: nil, googlePlay: true)

    static func checkPlayPush(_ input: [UInt8]) {
        do {
            let (push, notification) = try playReader.readPlayPush(input)
            invariant(notification.effect == .none, "a push changes an order by itself")
            invariant(notification.source == .googlePlay && notification.notificationID == "pubsub:\(push.messageID)", "a push kept under another id")
            invariant(notification.transactionID == nil && notification.purchaseToken == nil, "a push carries what would match an order")
            invariant(notification.discovered == nil, "an unconfirmed push made a discovered purchase")
            invariant(!hasLineBreak(push.messageID), "an unprintable message id")
        } catch {
            invariant(error.code == .malformedNotification, "a Play push refused as \(error.code)")
            invariant(!hasLineBreak(error.detail), "an unprintable refusal")
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return haystack.withUnsafeBufferPointer { hay in
            needle.withUnsafeBufferPointer { pin in
                for start in 0...(hay.count - pin.count) where hay[start] == pin[0] {
                    if memcmp(hay.baseAddress! + start, pin.baseAddress!, pin.count) == 0 { return true }
                }
                return false
            }
        }
    }
}
